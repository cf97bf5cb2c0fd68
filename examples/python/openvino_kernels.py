"""OpenVINO's CPU plugin in normoracle.assert_kernel's convention (numpy arrays of the case's
dtype in and out; bf16 as ml_dtypes.bfloat16).

LayerNorm is OpenVINO's MVN (normalize_variance, eps inside the square root, last axis)
followed by γ and β, the graph its frontends build for torch's and ONNX's LayerNorm; RMSNorm is
x·(mean(x²)+ε)^(-1/2)·γ, the pattern its transformations fuse into the CPU plugin's RMS
kernel. The model is built in the case's element type and compiled with the plugin's defaults
(inference precision as the plugin picks for this CPU).
"""
import numpy as np
import openvino as ov
import openvino.opset13 as ops

VERSION = f"openvino {ov.__version__.split('-')[0]}"
_core = ov.Core()
_compiled = {}

try:
    import ml_dtypes

    _BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:
    _BF16 = None


def _element_type(dtype):
    if dtype == np.float32:
        return ov.Type.f32
    if dtype == np.float16:
        return ov.Type.f16
    if _BF16 is not None and dtype == _BF16:
        return ov.Type.bf16
    raise NotImplementedError(f"no OpenVINO element type for {dtype}")


def _model(op, t, eps, has_gamma, has_beta):
    key = (op, t.get_type_name(), eps, has_gamma, has_beta)
    if key not in _compiled:
        x = ops.parameter([-1, -1], t, name="x")
        params = [x]
        axes = ops.constant(np.array([-1], np.int64))
        if op == "layer_norm":
            y = ops.mvn(x, axes, normalize_variance=True, eps=eps, eps_mode="inside_sqrt")
        else:
            mean_square = ops.reduce_mean(ops.multiply(x, x), axes, keep_dims=True)
            eps_c = ops.convert(ops.constant(np.array(eps, np.float32)), t)
            inv = ops.power(ops.add(mean_square, eps_c), ops.convert(ops.constant(np.array(-0.5, np.float32)), t))
            y = ops.multiply(x, inv)
        for name, given, combine in (("gamma", has_gamma, ops.multiply), ("beta", has_beta, ops.add)):
            if given:
                p = ops.parameter([-1], t, name=name)
                params.append(p)
                y = combine(y, p)
        model = ov.Model([y], params, f"{op}")
        _compiled[key] = _core.compile_model(model, "CPU")
    return _compiled[key]


def _tensor(a):
    if _BF16 is not None and a.dtype == _BF16:
        t = ov.Tensor(ov.Type.bf16, ov.Shape(list(a.shape)))
        np.copyto(t.data.view(np.uint16), np.ascontiguousarray(a).view(np.uint16))
        return t
    return ov.Tensor(np.ascontiguousarray(a))


def _run(op, x, gamma, beta, eps):
    t = _element_type(x.dtype)
    compiled = _model(op, t, float(eps), gamma is not None, beta is not None)
    inputs = [_tensor(a) for a in (x, gamma, beta) if a is not None]
    request = compiled.create_infer_request()
    request.infer(inputs)
    out = request.get_output_tensor(0)
    if t == ov.Type.bf16:
        return np.array(out.data, copy=True).view(np.uint16).reshape(x.shape).view(x.dtype)
    return np.array(out.data, copy=True).astype(x.dtype, copy=False)


def layer_norm(x, gamma, beta, eps):
    return _run("layer_norm", x, gamma, beta, eps)


def rms_norm(x, gamma, eps):
    return _run("rms_norm", x, gamma, None, eps)


KERNELS = {"layer_norm": layer_norm, "rms_norm": rms_norm}

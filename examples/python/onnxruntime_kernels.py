"""onnxruntime's LayerNormalization (opset 17) and RMSNormalization (opset 23) on its CPU
provider, in normoracle.assert_kernel's convention (numpy arrays of the case's dtype in and
out; bf16 as ml_dtypes.bfloat16). A dtype or op the installed onnxruntime cannot run raises.
"""
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

ONNX_TYPE = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float16): TensorProto.FLOAT16,
}
try:
    import ml_dtypes

    ONNX_TYPE[np.dtype(ml_dtypes.bfloat16)] = TensorProto.BFLOAT16
except ImportError:
    pass

VERSION = f"onnxruntime {ort.__version__} (onnx {onnx.__version__})"
_sessions = {}


def _session(op, t, eps, has_beta):
    key = (op, t, eps, has_beta)
    if key not in _sessions:
        # Both dimensions symbolic: one session serves every row count and width.
        inputs = [
            helper.make_tensor_value_info("X", t, ["N", "D"]),
            helper.make_tensor_value_info("Scale", t, ["D"]),
        ]
        names = ["X", "Scale"]
        if has_beta:
            inputs.append(helper.make_tensor_value_info("B", t, ["D"]))
            names.append("B")
        if op == "layer_norm":
            node = helper.make_node("LayerNormalization", names, ["Y"], axis=-1, epsilon=eps, stash_type=1)
            opset = 17
        else:
            node = helper.make_node("RMSNormalization", names, ["Y"], axis=-1, epsilon=eps, stash_type=1)
            opset = 23
        out = helper.make_tensor_value_info("Y", t, ["N", "D"])
        m = helper.make_model(helper.make_graph([node], "norm", inputs, [out]), opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = min(m.ir_version, 10)
        _sessions[key] = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return _sessions[key]


def _run(op, x, gamma, beta, eps):
    t = ONNX_TYPE.get(x.dtype)
    if t is None:
        raise NotImplementedError(f"no ONNX type for {x.dtype}")
    d = x.shape[-1]
    feeds = {"X": x, "Scale": np.ones(d, x.dtype) if gamma is None else gamma}
    if beta is not None:
        feeds["B"] = beta
    if t == TensorProto.BFLOAT16:
        # onnxruntime's Python API has no bfloat16 numpy type: OrtValues of raw bits.
        feeds = {
            k: ort.OrtValue.ortvalue_from_numpy_with_onnx_type(np.ascontiguousarray(v).view(np.uint16), t)
            for k, v in feeds.items()
        }
    (y,) = _session(op, t, eps, beta is not None).run(None, feeds)
    y = np.asarray(y)
    return y.view(x.dtype) if t == TensorProto.BFLOAT16 else y


def layer_norm(x, gamma, beta, eps):
    return _run("layer_norm", x, gamma, beta, eps)


def rms_norm(x, gamma, eps):
    return _run("rms_norm", x, gamma, None, eps)


KERNELS = {"layer_norm": layer_norm, "rms_norm": rms_norm}

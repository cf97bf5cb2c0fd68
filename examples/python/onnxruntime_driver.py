"""onnxruntime's LayerNormalization (opset 17) and RMSNormalization (opset 23, where the
installed onnxruntime has it) over a `normoracle cases` directory, in the case's own dtype.

    normoracle cases --out cases
    python3 examples/python/onnxruntime_driver.py cases
    normoracle check cases

Cases whose dtype or op the installed onnxruntime cannot run are left without outputs: the
check fails on them (exit 1) and names them; `normoracle cases --op ... --dtype ...` writes
only the cases it runs.
"""
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from normoracle_cases import cases, directory_from_argv, eps_of, f32_to_bf16_bits, store

ONNX_TYPE = {"f32": TensorProto.FLOAT, "f16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}


def model(op, dtype, eps, has_beta):
    # Both dimensions symbolic: one session serves every row count and width.
    t = ONNX_TYPE[dtype]
    inputs = [helper.make_tensor_value_info("X", t, ["N", "D"]), helper.make_tensor_value_info("Scale", t, ["D"])]
    names = ["X", "Scale"]
    if op == "layer_norm":
        if has_beta:
            inputs.append(helper.make_tensor_value_info("B", t, ["D"]))
            names.append("B")
        node = helper.make_node("LayerNormalization", names, ["Y"], axis=-1, epsilon=eps, stash_type=1)
        opset = 17
    else:
        node = helper.make_node("RMSNormalization", names, ["Y"], axis=-1, epsilon=eps, stash_type=1)
        opset = 23
    graph = helper.make_graph([node], "norm", inputs, [helper.make_tensor_value_info("Y", t, ["N", "D"])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = min(m.ir_version, 10)
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])


def to_storage(a, dtype):
    if dtype == "f16":
        return a.astype(np.float16)
    if dtype == "bf16":
        return f32_to_bf16_bits(a).view(np.uint16)
    return a.astype(np.float32)


def main():
    directory = directory_from_argv()
    sessions, done, skipped = {}, 0, 0
    for c, x, g, b in cases(directory):
        dt, op, d = c["dtype"], c["op"], c["d"]
        key = (op, dt, c["eps_bits"], b is not None)
        if key not in sessions:
            try:
                sessions[key] = model(op, dt, eps_of(c), b is not None)
            except Exception:
                sessions[key] = None
        sess = sessions[key]
        if sess is None:
            skipped += 1
            continue
        feeds = {"X": to_storage(x, dt), "Scale": to_storage(np.ones(d, np.float32) if g is None else g, dt)}
        if b is not None:
            feeds["B"] = to_storage(b, dt)
        if dt == "bf16":
            # onnxruntime's Python API has no bfloat16 numpy type: feed OrtValues of raw bits.
            feeds = {k: ort.OrtValue.ortvalue_from_numpy_with_onnx_type(v, TensorProto.BFLOAT16) for k, v in feeds.items()}
        try:
            (y,) = sess.run(None, feeds)
        except Exception:
            skipped += 1
            continue
        y = np.asarray(y)
        if dt == "bf16":
            np.save(f"{directory}/{c['y']}", y.view(np.uint16))
        else:
            store(directory, c["y"], y, dt)
        done += 1
    print(f"onnxruntime {ort.__version__} (onnx {onnx.__version__}): wrote outputs of {done} cases, {skipped} unsupported")


if __name__ == "__main__":
    main()

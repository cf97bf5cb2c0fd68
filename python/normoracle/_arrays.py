"""Arrays to and from the native module: dtypes by name, `.npy` bytes, raw bit patterns.

bfloat16 is `ml_dtypes.bfloat16` where ml_dtypes is installed, and uint16 bit patterns
always (numpy has no bfloat16 of its own).
"""
import io

import numpy as np

_BFLOAT16 = []


def bfloat16():
    """ml_dtypes.bfloat16 as a numpy dtype, or None without ml_dtypes. Imported on first use:
    ml_dtypes' import costs more than the rest of the package's."""
    if not _BFLOAT16:
        try:  # ml_dtypes comes with jax; without it bfloat16 travels as uint16 bit patterns.
            import ml_dtypes

            _BFLOAT16.append(np.dtype(ml_dtypes.bfloat16))
        except ImportError:  # pragma: no cover - exercised where ml_dtypes is absent
            _BFLOAT16.append(None)
    return _BFLOAT16[0]


def is_bfloat16(dtype):
    """Whether a numpy dtype is ml_dtypes.bfloat16 (without importing ml_dtypes)."""
    return dtype.kind == "V" and dtype.name == "bfloat16"


# The library's dtype names and the numpy dtype each is stored as (bf16 as bit patterns).
STORAGE = {
    "f16": np.dtype("<f2"),
    "bf16": np.dtype("<u2"),
    "f32": np.dtype("<f4"),
    "f64": np.dtype("<f8"),
}

_ALIASES = {
    "f16": "f16",
    "float16": "f16",
    "half": "f16",
    "bf16": "bf16",
    "bfloat16": "bf16",
    "f32": "f32",
    "float32": "f32",
    "float": "f32",
    "f64": "f64",
    "float64": "f64",
    "double": "f64",
}


def dtype_name(dtype):
    """The library's name (f16, bf16, f32, f64) for a dtype given as a name, a numpy dtype,
    ml_dtypes.bfloat16, or a torch/jax dtype (by its name)."""
    if isinstance(dtype, str):
        key = dtype.lower()
    else:
        try:
            np_dtype = np.dtype(dtype)
        except TypeError:
            np_dtype = None
        if np_dtype is not None and is_bfloat16(np_dtype):
            return "bf16"
        if np_dtype is not None and np_dtype.kind == "f":
            key = np_dtype.name
        else:
            # torch.float32 prints as 'torch.float32'; jnp.bfloat16 has a __name__.
            key = getattr(dtype, "__name__", None) or str(dtype).rsplit(".", 1)[-1]
    name = _ALIASES.get(str(key).lower())
    if name is None:
        raise ValueError(f"unknown dtype '{dtype}' (f16, bf16, f32, f64)")
    return name


def dtype_of(array, what):
    """The library's dtype of an array: float16/32/64, ml_dtypes.bfloat16, or uint16 taken
    as bfloat16 bit patterns."""
    dt = array.dtype
    if is_bfloat16(dt) or dt == np.uint16:
        return "bf16"
    if dt.kind == "f" and dt.itemsize in (2, 4, 8):
        return {2: "f16", 4: "f32", 8: "f64"}[dt.itemsize]
    raise TypeError(
        f"{what} has dtype {dt}; expected float16, float32, float64, bfloat16 (ml_dtypes) "
        "or uint16 (bfloat16 bit patterns)"
    )


def as_array(value, what):
    """A numpy array from an array-like (torch and jax arrays must be converted first)."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__array__") or isinstance(value, (list, tuple)):
        return np.asarray(value)
    raise TypeError(f"{what} must be an array, got {type(value).__name__}")


def npy_bytes(array):
    """The array as `.npy` bytes (C order, little-endian): what the CLI reads."""
    array = np.ascontiguousarray(array)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def from_npy_bytes(data):
    return np.load(io.BytesIO(data), allow_pickle=False)


def bf16_out(bits, as_ml_dtypes):
    """bf16 bit patterns as ml_dtypes.bfloat16 (when asked and installed) or uint16."""
    if as_ml_dtypes and bfloat16() is not None:
        return bits.view(bfloat16())
    return bits


def from_bits(data, name, shape, bf16_as_ml_dtypes):
    """An array of dtype `name` from raw little-endian bit patterns."""
    if data is None:
        return None
    a = np.frombuffer(data, dtype=STORAGE[name]).reshape(shape).copy()
    return bf16_out(a, bf16_as_ml_dtypes) if name == "bf16" else a


def to_bits(y, name, shape, what):
    """A kernel's output as raw little-endian bit patterns of dtype `name`; its dtype and
    shape must be the case's (no silent conversion: a kernel returning float64 for a float32
    case is told so)."""
    y = as_array(y, what)
    if tuple(y.shape) != tuple(shape):
        raise ValueError(f"{what} has shape {tuple(y.shape)} but x has shape {tuple(shape)}")
    got = dtype_of(y, what)
    if got != name:
        raise TypeError(f"{what} has dtype {y.dtype} but the case is {name}")
    return np.ascontiguousarray(y).view(STORAGE[name]).astype(STORAGE[name], copy=False).tobytes()


def eps_text(eps):
    """ε as the decimal the CLI's --eps takes (the f32 nearest to it is used)."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating, np.integer)):
        raise TypeError(f"eps must be a number, got {type(eps).__name__}")
    return repr(float(eps))

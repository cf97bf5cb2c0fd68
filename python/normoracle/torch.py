"""`normoracle.torch.assert_kernel`: the battery through a function of torch tensors.

    import normoracle.torch

    def test_fused_layer_norm():
        normoracle.torch.assert_kernel(my_layer_norm, op="layer_norm", dtype=torch.bfloat16,
                                       device="cuda")

Each case's tensors are made on `device` (bfloat16 included), `fn` is called as in
`normoracle.assert_kernel`, and its output is brought back to the CPU and judged in the
case's dtype. torch is imported when this function runs, not when normoracle is imported;
it is not a dependency of the package.
"""
import numpy as np

import normoracle

from . import _arrays


def _converters(device):
    import torch  # lazily: torch is optional

    def to_torch(a):
        if a.dtype == np.uint16 or _arrays.is_bfloat16(a.dtype):
            t = torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
        else:
            t = torch.from_numpy(np.ascontiguousarray(a))
        return t.to(device)

    def from_torch(y):
        if not isinstance(y, torch.Tensor):
            raise TypeError(f"the kernel's output must be a torch.Tensor, got {type(y).__name__}")
        y = y.detach().to("cpu").contiguous()
        if y.dtype == torch.bfloat16:
            return y.view(torch.int16).numpy().view(np.uint16)
        return y.numpy()

    return to_torch, from_torch


def judge_kernel(fn, *, op, dtype, device="cpu", **options):
    """Runs the battery through `fn` (torch tensors on `device`) and returns the Report."""
    extra = f", device={str(device)!r}"
    return normoracle._judge(fn, _converters(device), "normoracle.torch.assert_kernel", extra=extra,
                             op=op, dtype=dtype, **options)


def assert_kernel(fn, *, op, dtype, device="cpu", **options):
    """`normoracle.assert_kernel` for a function of torch tensors on `device`; dtype may be
    a torch dtype (torch.float32, torch.float16, torch.bfloat16) or a name."""
    return normoracle._raise_for(judge_kernel(fn, op=op, dtype=dtype, device=device, **options))

"""Problem keys: what identifies a call's problem in autotune caches and trace-apply pins.

A key is a tuple of ints, floats, strings, bools, ``None`` and nested tuples, so
that it survives a JSON round trip (docs/autotuning.rst, "Problem keys"). Each
API has a key function ``(arguments) -> key``, where ``arguments`` maps its
parameter names to the call's values: the stable ops' own (by dotted name), one
registered with `set_key_function`, or `default_problem_key`.

Key functions run on every tuned lookup, where each tensor attribute read costs
40-80 ns (``tensor.device`` over 200 ns), so they read each attribute once. A
key holds ``tensor.shape`` as is: a ``torch.Size`` is a tuple, equal to and
hashing like the plain tuple that the same key read back from JSON holds, so
keys computed for calls and keys loaded from files match without conversion.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict

import torch
from torch import Tensor

__all__ = ["KeyFunction", "default_problem_key", "freeze_key", "key_function", "set_key_function"]

KeyFunction = Callable[[Dict[str, Any]], tuple]


class _DtypeNames(dict):
    """``torch.bfloat16 -> "bfloat16"``, remembered per dtype (``str(dtype)`` is slow)."""

    def __missing__(self, dtype: torch.dtype) -> str:
        name = self[dtype] = str(dtype).rpartition(".")[2]
        return name


_DTYPE_NAMES = _DtypeNames()


def _device_type(tensor: Tensor) -> str:
    """``tensor.device.type``, from flags that are several times cheaper to read."""
    if tensor.is_cuda:
        return "cuda"
    return "cpu" if tensor.is_cpu else tensor.device.type


# Argument types that are never tensors: skipped without the (slow) isinstance
# check that torch.Tensor's metaclass makes of them.
_PLAIN_TYPES = frozenset({type(None), str, int, float, bool})


def default_problem_key(arguments: Dict[str, Any]) -> tuple:
    """``(device type, (name, shape, dtype), ...)`` of the call's tensor arguments.

    ``arguments`` maps the API's parameter names to the call's values. The device
    type is the first tensor's (a call's tensors share a device). Non-tensor
    arguments (scalars, ``None``, ``backend``) are not part of the key.
    """
    key: list = []
    for name, value in arguments.items():
        kind = value.__class__
        if kind is Tensor or (kind not in _PLAIN_TYPES and isinstance(value, Tensor)):
            if not key:
                key.append(_device_type(value))
            key.append((name, value.shape, _DTYPE_NAMES[value.dtype]))
    return tuple(key)


def _mm_bf16_key(arguments: Dict[str, Any]) -> tuple:
    """``(M, N, K, dtype, device type)`` of ``a`` (M x K) times ``b`` (K x N)."""
    a = arguments["a"]
    m, k = a.shape  # 2-D: the dispatch checked the arguments before the lookup
    return (m, arguments["b"].shape[1], k, _DTYPE_NAMES[a.dtype], _device_type(a))


def _rmsnorm_key(arguments: Dict[str, Any]) -> tuple:
    """``(rows, hidden, dtype, device type)``; rows is the product of the leading dims."""
    x = arguments["x"]
    shape = x.shape
    return (math.prod(shape[:-1]), shape[-1], _DTYPE_NAMES[x.dtype], _device_type(x))


# The stable ops' keys, by the APIs' dotted names; other APIs use
# `default_problem_key` unless registered.
_BUILTIN_KEY_FUNCTIONS: Dict[str, KeyFunction] = {
    "flashinfer.gemm.mm_bf16": _mm_bf16_key,
    "flashinfer.norm.rmsnorm": _rmsnorm_key,
}
_key_functions: Dict[str, KeyFunction] = dict(_BUILTIN_KEY_FUNCTIONS)


def key_function(api_name: str) -> KeyFunction:
    """The key function of the API called ``api_name``."""
    return _key_functions.get(api_name, default_problem_key)


def set_key_function(api_name: str, function: KeyFunction) -> None:
    """Use ``function`` as the key function of the API called ``api_name``."""
    _key_functions[api_name] = function


def freeze_key(value: Any) -> Any:
    """A problem key read from JSON or TOML (lists) in the hashable tuple form.

    Raises `TypeError` for a key holding a table (a dict), which no key function
    returns, or nested too deeply to convert; loaders count such an entry as
    malformed.
    """
    try:
        frozen = _tuples(value)
    except RecursionError:
        raise TypeError("problem key nested too deeply") from None
    hash(frozen)
    return frozen


def _tuples(value: Any) -> Any:
    if value.__class__ is list:
        return tuple([_tuples(item) if item.__class__ is list else item for item in value])
    return value


def _reset_for_tests() -> None:
    """Forget registered key functions (tests only)."""
    _key_functions.clear()
    _key_functions.update(_BUILTIN_KEY_FUNCTIONS)

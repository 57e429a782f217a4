"""A state_dict as ftc's typed buffers and a JSON skeleton, never pickle.

flatten(obj) walks nested dicts, lists and tuples and returns the
skeleton (compact JSON bytes) with the tensors it found, in order;
unflatten(skeleton, tensors) builds the same structure back. The skeleton
holds the structure and every value that is not a tensor: None, bool,
int, float (nan and infinities too) and str. Anything else cannot travel
without code, so flatten refuses it, naming where it is.

Each JSON object of a skeleton is a tag: {"D": [[key, value], ...]} a
dict (keys of any supported type, in order), {"L": [...]} a list, {"U":
[...]} a tuple, {"T": i} the i-th tensor (with "dtype" and "shape" when
it travels as raw bytes, see as_buffer), {"F": "nan"|"inf"|"-inf"} a
float JSON cannot write. Plain JSON values are themselves."""
import json
import math

# dtypes ftc's buffers carry as themselves; others travel as their bytes
# (uint8) and are viewed back as their dtype.
_NATIVE = ("float32", "float64", "float16", "bfloat16", "int8", "uint8",
           "int32", "int64")


def _is_tensor(x):
    return hasattr(x, "data_ptr") and hasattr(x, "dtype") and \
        hasattr(x, "is_contiguous")


def dtype_name(t):
    return str(t.dtype).rsplit(".", 1)[-1]


def flatten(obj):
    """(skeleton bytes, [tensor]) of obj; TypeError names a value that
    cannot travel without pickle."""
    tensors = []

    def enc(x, path):
        if _is_tensor(x):
            tensors.append(x)
            tag = {"T": len(tensors) - 1}
            if dtype_name(x) not in _NATIVE:
                tag["dtype"] = dtype_name(x)
                tag["shape"] = list(x.shape)
            return tag
        if isinstance(x, dict):
            return {"D": [[enc(k, f"{path} key {k!r}"), enc(v, f"{path}[{k!r}]")]
                          for k, v in x.items()]}
        if isinstance(x, list):
            return {"L": [enc(v, f"{path}[{i}]") for i, v in enumerate(x)]}
        if isinstance(x, tuple):
            return {"U": [enc(v, f"{path}[{i}]") for i, v in enumerate(x)]}
        if isinstance(x, float) and not math.isfinite(x):
            return {"F": repr(x)}
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        raise TypeError(f"state{path}: a {type(x).__module__}."
                        f"{type(x).__qualname__} cannot be healed without "
                        "pickle (tensors, dicts, lists, tuples, None, bool, "
                        "int, float and str can)")

    skeleton = json.dumps(enc(obj, ""), separators=(",", ":"),
                          allow_nan=False).encode()
    return skeleton, tensors


def unflatten(skeleton, tensors):
    """The structure of skeleton with its tensors put back in."""
    def dec(x):
        if not isinstance(x, dict):
            return x
        if "D" in x:
            return {dec(k): dec(v) for k, v in x["D"]}
        if "L" in x:
            return [dec(v) for v in x["L"]]
        if "U" in x:
            return tuple(dec(v) for v in x["U"])
        if "F" in x:
            return float(x["F"])
        t = tensors[x["T"]]
        if "dtype" in x:
            t = t.view(_torch_dtype(x["dtype"])).reshape(x["shape"])
        return t

    return dec(json.loads(skeleton))


def _torch_dtype(name):
    import torch
    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise TypeError(f"healed state: unknown torch dtype {name!r}")
    return dt


def as_buffer(t):
    """A contiguous CPU tensor holding t's values in a dtype ftc's buffers
    carry (t itself when it is one already): a copy for a device,
    non-contiguous or non-native tensor, raw bytes (uint8) for the last."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    if dtype_name(t) not in _NATIVE:
        import torch
        t = t.reshape(-1).view(torch.uint8) if t.numel() else \
            torch.empty(0, dtype=torch.uint8)
    return t

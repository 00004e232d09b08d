"""A nested state as files of data: reading it never runs code.

A tree of dicts, lists and tuples whose leaves are torch tensors, NumPy arrays, numbers,
booleans, strings or None is written as ``<stem>.safetensors`` (every tensor, keyed by its
path in the tree), ``<stem>.npz`` (every array; with ``compress``, deflated where that
halves it) and ``<stem>.json`` (the structure, with the other leaves). Reading parses JSON, safetensors
and npz with pickles refused, so a file someone sent you (a frozen opponent's networks, a
whole checkpoint) cannot execute anything.

``read_tree(stem, stream=KEY)`` leaves the arrays below a dict key ``KEY`` in the file as
``StoredArray``s (``relayrl.core.stored_array``), which their reader streams into place: a
replay's rows are read straight into its buffer, so a resume holds one copy of them, not
two.
"""

import json
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from relayrl.core.stored_array import StoredArray, npy_header

TENSORS, ARRAYS, STRUCTURE = ".safetensors", ".npz", ".json"
SAMPLE = 1 << 20  # bytes of an array deflated to judge whether deflating all of it pays
WORTH = 0.5  # ... it pays where the sample shrinks to this share of its bytes or less


def tree_files(stem: Path) -> tuple[Path, Path, Path]:
    return tuple(stem.with_name(stem.name + suffix) for suffix in (TENSORS, ARRAYS, STRUCTURE))  # type: ignore[return-value]


def _pays_to_deflate(array: np.ndarray) -> bool:
    """Whether level 1 deflate shrinks ``array`` (C-contiguous) to at most ``WORTH`` of its
    bytes, judged on its first ``SAMPLE`` bytes; arrays smaller than that are deflated."""
    raw = array.reshape(-1).view(np.uint8)
    return raw.size <= SAMPLE or len(zlib.compress(raw[:SAMPLE], 1)) <= WORTH * SAMPLE


def _write_arrays(path: Path, arrays: dict[str, np.ndarray], compress: bool) -> None:
    """An npz that ``np.load`` reads. With ``compress``, level 1 deflate for the arrays it
    shrinks to half or less (grid observations, rewards, flags: to a tenth or less), stored
    as they are otherwise: a replay of continuous observations deflates to about 0.75 of
    its size at about 50 MB/s, which made a 1M-row replay's save 9.4 s instead of 0.7
    (docs/results/checkpoints.md)."""
    with zipfile.ZipFile(path, "w", compresslevel=1) as archive:
        for i, array in enumerate(arrays.values()):
            array = np.ascontiguousarray(array)
            archive.compression = zipfile.ZIP_DEFLATED if compress and _pays_to_deflate(array) else zipfile.ZIP_STORED
            with archive.open(f"{i}.npy", "w", force_zip64=True) as handle:
                np.lib.format.write_array(handle, array, allow_pickle=False)


def write_tree(stem: Path, tree: Any, compress: bool = False) -> tuple[Path, Path, Path]:
    """Writes ``tree`` as ``<stem>.safetensors``, ``<stem>.npz`` and ``<stem>.json``;
    returns the three paths."""
    tensors: dict[str, torch.Tensor] = {}
    arrays: dict[str, np.ndarray] = {}

    def encode(node: Any, path: str) -> Any:
        if isinstance(node, torch.Tensor):
            tensors[path] = node.detach().cpu().contiguous()
            return {"__tensor__": path}
        if isinstance(node, StoredArray):  # a loaded state written again (its rows read now)
            node = np.asarray(node)
        if isinstance(node, np.ndarray):
            if node.dtype.hasobject:
                raise TypeError(f"{path}: an array of Python objects cannot be written as data")
            arrays[path] = node
            return {"__array__": len(arrays) - 1}
        if isinstance(node, np.generic):
            return node.item()
        if isinstance(node, dict):
            if all(isinstance(k, str) for k in node):
                return {"__dict__": {k: encode(v, f"{path}/{k}") for k, v in node.items()}}
            return {"__pairs__": [[encode(k, f"{path}/key{i}"), encode(v, f"{path}/{i}")] for i, (k, v) in enumerate(node.items())]}
        if isinstance(node, (list, tuple)):
            items = [encode(v, f"{path}/{i}") for i, v in enumerate(node)]
            return {"__tuple__": items} if isinstance(node, tuple) else items
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        raise TypeError(f"{path or 'the tree'}: a {type(node).__name__} cannot be written as data")

    structure = encode(tree, "")
    tensor_file, array_file, structure_file = tree_files(stem)
    save_file(tensors, str(tensor_file))
    _write_arrays(array_file, arrays, compress)
    structure_file.write_text(json.dumps(structure))
    return tensor_file, array_file, structure_file


def _check_array_sizes(path: Path) -> None:
    """Every array's declared size fits the bytes its file holds, checked before anything
    is allocated (a damaged or crafted header could declare a terabyte)."""
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            with archive.open(info) as handle:
                shape, _, dtype = npy_header(handle)  # the header alone
                declared = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
                if declared > info.file_size:
                    raise ValueError(f"array {info.filename} declares {declared:,} bytes but its file holds {info.file_size:,}")


def read_tree(stem: Path, at: tuple[str, ...] = (), stream: str | None = None) -> Any:
    """The tree ``write_tree`` wrote (tensors on the CPU, arrays as NumPy), or its subtree
    under the dict keys ``at`` (None where there is none), reading only that subtree's
    arrays (a learner's networks without its replay's rows). Arrays below a dict key
    ``stream`` come back as ``StoredArray``s (see the module's docstring)."""
    tensor_file, array_file, structure_file = tree_files(stem)
    tensors = load_file(str(tensor_file))
    _check_array_sizes(array_file)
    node = json.loads(structure_file.read_text())
    for key in at:
        if not isinstance(node, dict) or key not in node.get("__dict__", {}):
            return None
        node = node["__dict__"][key]
    with np.load(array_file, allow_pickle=False) as archive:
        return _decode(node, tensors, archive, array_file, stream)


def _decode(node: Any, tensors: dict[str, torch.Tensor], archive: Any, array_file: Path, stream: str | None) -> Any:
    """A node of the written structure as its tree, its arrays read from ``archive`` (an
    npz, read member by member) as they are met, or left in ``array_file`` below a key
    ``stream``."""

    def decode(node: Any, streamed: bool) -> Any:
        if isinstance(node, list):
            return [decode(v, streamed) for v in node]
        if not isinstance(node, dict):
            return node
        if "__tensor__" in node:
            return tensors[node["__tensor__"]]
        if "__array__" in node:
            member = f"{node['__array__']}"
            return StoredArray(array_file, f"{member}.npy") if streamed else archive[member]
        if "__tuple__" in node:
            return tuple(decode(v, streamed) for v in node["__tuple__"])
        if "__pairs__" in node:
            return {decode(k, streamed): decode(v, streamed) for k, v in node["__pairs__"]}
        return {k: decode(v, streamed or k == stream) for k, v in node["__dict__"].items()}

    return decode(node, False)

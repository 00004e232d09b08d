"""An array left in its ``.npy`` member of an npz file until its reader wants it, then
streamed into place: a resume reads a replay's rows straight into its buffer
(``relayrl.core.tree_files``), holding one copy of them, not two. NumPy only, so the
replays import it without torch."""

import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

CHUNK = 1 << 24  # bytes a streamed array is read by


def npy_header(handle: Any) -> tuple[tuple[int, ...], bool, np.dtype]:
    """An ``.npy`` member's shape, Fortran order and dtype, read from its open ``handle``."""
    version = np.lib.format.read_magic(handle)
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    return read_header(handle)


class StoredArray:
    """An array left in its npz member: ``shape`` and ``dtype`` from the header, the rows
    read on demand, by ``read_into`` into a buffer or as a new array (``np.asarray``).
    Pickling sends the array itself (a Ray worker need not see the file)."""

    def __init__(self, path: Path, member: str) -> None:
        self.path, self.member = path, member
        with zipfile.ZipFile(path) as archive, archive.open(member) as handle:
            self.shape, fortran, self.dtype = npy_header(handle)
        if fortran:
            raise ValueError(f"array {member} is stored in Fortran order; relayrl writes C order")

    def __len__(self) -> int:
        return self.shape[0]

    def read_into(self, out: np.ndarray) -> None:
        """Streams the rows into ``out`` (C-contiguous, of this shape and dtype), a chunk at a
        time; the member's CRC is checked at its end."""
        if out.shape != self.shape or out.dtype != self.dtype or not out.flags.c_contiguous:
            raise ValueError(f"array {self.member} is {self.shape} {self.dtype}; it cannot be read into {out.shape} {out.dtype}")
        target = memoryview(out.reshape(-1).view(np.uint8))
        try:
            with zipfile.ZipFile(self.path) as archive, archive.open(self.member) as handle:
                npy_header(handle)
                done = 0
                while done < len(target):
                    read = handle.readinto(target[done : done + CHUNK])
                    if not read:
                        raise ValueError(f"array {self.member} in {self.path} ends after {done:,} of its {len(target):,} bytes")
                    done += read
                if handle.read(1):  # reading to the end checks the CRC
                    raise ValueError(f"array {self.member} in {self.path} holds more bytes than its header declares")
        except (zipfile.BadZipFile, zlib.error, EOFError) as error:  # a resume refuses a ValueError by name
            raise ValueError(f"array {self.member} in {self.path} is damaged ({error})") from None

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = np.empty(self.shape, self.dtype)
        self.read_into(array)
        return array if dtype is None else array.astype(dtype, copy=False)

    def __reduce__(self) -> tuple[Any, tuple[np.ndarray]]:
        return np.asarray, (np.asarray(self),)


def fill(out: np.ndarray, rows: "np.ndarray | StoredArray") -> None:
    """``out[...] = rows``, streaming ``rows`` from its file where it is a ``StoredArray``."""
    if isinstance(rows, StoredArray):
        rows.read_into(out)
    else:
        out[...] = rows

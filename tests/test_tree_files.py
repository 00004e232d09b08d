"""Checkpoints are written and read as data: a round trip keeps every leaf and its type, and
a file that would run code when unpickled is never executed, whether a resume, an
evaluation or a frozen opponent reads it."""

import hashlib
import json
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from relayrl.cli import main
from relayrl.core.errors import CheckpointError
from relayrl.core.stored_array import StoredArray, fill
from relayrl.core.tree_files import read_tree, tree_files, write_tree
from relayrl.experiment import build_run, build_config, train
from relayrl.experiment.checkpoint import list_checkpoints, load_checkpoint, load_policies


def test_a_tree_round_trips_with_its_types(tmp_path):
    tree = {
        "online": {"w": torch.randn(3, 4), "b": torch.zeros(3, dtype=torch.float64)},
        "stats": {"mean": np.arange(5, dtype=np.float32), "seen": np.array([True, False])},
        "steps": {0: 7, 1: (0.9, 0.999)},
        "flags": [True, None, "sym_kl", 2.5, np.int64(3)],
    }
    write_tree(tmp_path / "policy", tree)
    back = read_tree(tmp_path / "policy")
    torch.testing.assert_close(back["online"]["w"], tree["online"]["w"], rtol=0, atol=0)
    assert back["online"]["b"].dtype == torch.float64
    np.testing.assert_array_equal(back["stats"]["mean"], tree["stats"]["mean"])
    assert isinstance(back["stats"]["seen"], np.ndarray) and back["stats"]["seen"].dtype == bool
    assert back["steps"] == {0: 7, 1: (0.9, 0.999)}
    assert back["flags"] == [True, None, "sym_kl", 2.5, 3]


def test_an_object_that_is_not_data_is_refused(tmp_path):
    with pytest.raises(TypeError, match="a set cannot be written as data"):
        write_tree(tmp_path / "policy", {"ids": {1, 2}})


class _RunsCode:
    """Unpickling this creates the file RAN in the current directory."""

    def __reduce__(self):
        return (exec, ("open('RAN', 'w').close()",))


TINY = {"preset": "tiny", "env": {"name": "corridor", "settings": {"n_agents": 2, "length": 4, "max_steps": 8}},
        "total_steps": 200, "report_interval": 100, "checkpoint_interval": 200, "eval": {"interval": 0},
        "dqn": {"learning_starts": 50, "buffer_size": 300, "batch_size": 8}}


def _trained(run_dir: Path) -> Path:
    """The one checkpoint of a tiny corridor run trained in ``run_dir``."""
    run = build_run(build_config(TINY), run_dir, verbose=False)
    run.train()
    run.close()
    (checkpoint,) = list_checkpoints(run_dir / "checkpoints")
    return checkpoint


def test_loading_a_policy_never_unpickles(tmp_path, monkeypatch):
    checkpoint = _trained(tmp_path)
    assert sorted(p.name for p in checkpoint.iterdir()) == [
        "manifest.json", "policy.json", "policy.npz", "policy.safetensors", "state.json", "state.npz", "state.safetensors"
    ]
    policies = load_policies(checkpoint)
    assert set(policies) == {"runner"} and isinstance(policies["runner"]["networks"]["online"], dict)
    bomb = pickle.dumps(_RunsCode())
    proof = tmp_path / "proof"
    proof.mkdir()
    monkeypatch.chdir(proof)
    pickle.loads(bomb)
    assert (proof / "RAN").exists()  # what unpickling it would do
    # the bomb where the policy's structure goes, with a matching sha256: read as JSON, refused
    monkeypatch.chdir(tmp_path)
    _, _, structure = tree_files(checkpoint / "policy")
    structure.write_bytes(bomb)
    manifest = json.loads((checkpoint / "manifest.json").read_text())
    manifest["files"]["policy.json"] = hashlib.sha256(structure.read_bytes()).hexdigest()
    (checkpoint / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="not relayrl checkpoint data"):
        load_policies(checkpoint)
    assert not (tmp_path / "RAN").exists()


def _swap(checkpoint, name: str, content: bytes) -> None:
    """Replaces a checkpoint file, with a matching sha256 in its manifest (an attacker's copy)."""
    (checkpoint / name).write_bytes(content)
    manifest = json.loads((checkpoint / "manifest.json").read_text())
    manifest["files"][name] = hashlib.sha256(content).hexdigest()
    (checkpoint / "manifest.json").write_text(json.dumps(manifest))


def test_a_checkpoint_carrying_code_is_refused_by_resume_eval_and_frozen_opponents(tmp_path, monkeypatch):
    """The pickle bomb rides in the state's arrays (an object array, which only unpickling
    could read) and in the policy's structure; every reader refuses it and it never runs."""
    config = {"preset": "tiny", "env": {"name": "corridor", "settings": {"n_agents": 2, "length": 4, "max_steps": 8}},
              "total_steps": 200, "report_interval": 100, "checkpoint_interval": 200, "eval": {"interval": 0},
              "dqn": {"learning_starts": 50, "buffer_size": 300, "batch_size": 8}}
    run_dir = tmp_path / "run"
    run = build_run(build_config(config), run_dir, verbose=False)
    run.train()
    run.close()
    (checkpoint,) = list_checkpoints(run_dir / "checkpoints")
    monkeypatch.chdir(tmp_path)
    bomb_array = tmp_path / "bomb.npz"
    np.savez(bomb_array, np.array([_RunsCode()], dtype=object), allow_pickle=True)
    _swap(checkpoint, "state.npz", bomb_array.read_bytes())
    _swap(checkpoint, "policy.json", pickle.dumps(_RunsCode()))
    with pytest.raises(CheckpointError, match="not relayrl checkpoint data"):
        load_checkpoint(checkpoint)
    with pytest.raises(CheckpointError, match="not relayrl checkpoint data"):  # resume
        build_run(build_config({**config, "total_steps": 400}), run_dir, verbose=False).train()
    assert main(["eval", str(run_dir), "--episodes", "1"]) != 0  # evaluation reads the policy file
    frozen = {**config, "env": {"name": "corridor", "settings": {"n_agents": 2, "n_walkers": 2, "length": 4, "max_steps": 8}},
              "policies": {"runner": {"kind": "frozen", "checkpoint": str(checkpoint)}}}
    with pytest.raises(CheckpointError, match="not relayrl checkpoint data"):
        build_run(build_config(frozen), None, verbose=False)
    assert not (tmp_path / "RAN").exists()


def test_a_pickle_checkpoint_of_an_earlier_relayrl_is_refused_with_the_way_on(tmp_path):
    checkpoint = tmp_path / "checkpoints" / "step_0000000200"
    checkpoint.mkdir(parents=True)
    (checkpoint / "state.pkl").write_bytes(pickle.dumps(_RunsCode()))
    digest = hashlib.sha256((checkpoint / "state.pkl").read_bytes()).hexdigest()
    (checkpoint / "manifest.json").write_text(json.dumps({"env_steps": 200, "files": {"state.pkl": digest}}))
    with pytest.raises(CheckpointError, match="written as pickles by an earlier relayrl.*provenance.yaml"):
        load_checkpoint(checkpoint)
    assert not (tmp_path / "RAN").exists() and not (Path.cwd() / "RAN").exists()


def _npy_declaring(shape: tuple[int, ...]) -> bytes:
    """An npz whose one array's header declares ``shape`` (float64) over 16 bytes of data."""
    import io
    import zipfile

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": shape})
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("0.npy", header.getvalue() + bytes(16))
    return out.getvalue()


@pytest.mark.parametrize("damage", ["terabyte array", "missing array", "deep nesting", "wrong types", "not json"])
def test_a_damaged_or_crafted_checkpoint_is_refused_by_name(tmp_path, damage):
    """Files with a valid manifest (a crafted copy) that are not a state this run resumes:
    each is one CheckpointError, nothing allocated past the file's size, nothing run."""
    config, checkpoint = TINY, _trained(tmp_path)
    structure = json.loads((checkpoint / "state.json").read_text())
    if damage == "terabyte array":
        _swap(checkpoint, "state.npz", _npy_declaring((2**37,)))
    elif damage == "missing array":
        structure["__dict__"]["counters"] = {"__array__": 10_000}
        _swap(checkpoint, "state.json", json.dumps(structure).encode())
    elif damage == "deep nesting":
        _swap(checkpoint, "state.json", ("[" * 100_000 + "]" * 100_000).encode())
    elif damage == "wrong types":
        structure["__dict__"]["counters"] = [1, 2, 3]
        _swap(checkpoint, "state.json", json.dumps(structure).encode())
    else:
        _swap(checkpoint, "state.json", b"{not json")
    with pytest.raises(CheckpointError, match=r"not relayrl checkpoint data|does not hold a state this run resumes from"):
        build_run(build_config({**config, "total_steps": 400}), tmp_path, verbose=False).train()


def test_a_run_directory_given_for_a_checkpoint_names_its_checkpoints(tmp_path):
    run = train(build_config({"preset": "where", "env": {"name": "corridor"}, "total_steps": 100, "checkpoint_interval": 100, "eval": {"interval": 0}}),
                tmp_path, verbose=False)
    last = list_checkpoints(run.run_dir.path / "checkpoints")[-1]
    for given in (run.run_dir.path, run.run_dir.path / "checkpoints"):
        with pytest.raises(CheckpointError, match=rf"is not a checkpoint but holds them: pass one of .*step_\* \(the last: {last}"):
            load_policies(given)
    assert set(load_policies(last)) == {"runner"}


def test_arrays_below_the_stream_key_stay_in_the_file_until_read_into_place(tmp_path):
    rows = np.arange(6 * 5, dtype=np.float32).reshape(6, 5)
    tree = {"replay": {"data": {"obs": [rows, rows[:2]]}, "size": np.array([6, 2])}}
    write_tree(tmp_path / "state", tree, compress=True)
    plain = read_tree(tmp_path / "state")
    assert isinstance(plain["replay"]["data"]["obs"][0], np.ndarray)
    streamed = read_tree(tmp_path / "state", stream="data")
    first, second = streamed["replay"]["data"]["obs"]
    assert isinstance(first, StoredArray) and isinstance(streamed["replay"]["size"], np.ndarray)
    assert (len(first), first.shape, first.dtype) == (6, (6, 5), np.float32)
    buffer = np.zeros((8, 5), np.float32)
    fill(buffer[:6], first)
    np.testing.assert_array_equal(buffer[:6], rows)
    np.testing.assert_array_equal(np.asarray(second), rows[:2])
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(first)), rows)  # a Ray worker gets the rows, not the file
    with pytest.raises(ValueError, match=r"cannot be read into \(8, 5\)"):
        first.read_into(buffer)


def test_a_streamed_member_that_was_damaged_is_refused(tmp_path):
    """A member whose bytes changed after reading (past the manifest's check) fails its CRC."""
    write_tree(tmp_path / "state", {"data": [np.arange(1000, dtype=np.int64)]})
    (stored,) = read_tree(tmp_path / "state", stream="data")["data"]
    raw = bytearray((tmp_path / "state.npz").read_bytes())
    raw[raw.index(np.arange(1000, dtype=np.int64)[500:510].tobytes())] ^= 1
    (tmp_path / "state.npz").write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"array 0\.npy in .*state\.npz is damaged \(Bad CRC-32"):
        np.asarray(stored)


RESUME_PEAK = """
import sys
from pathlib import Path
import numpy as np
from relayrl.experiment.checkpoint import load_checkpoint, save_checkpoint
from relayrl.replay.buffer import FieldSpec, ReplayBuffer

rows, size = 50_000, 4096  # 200 MB of 8-bit observations
capacity = int(sys.argv[3])  # rows the buffer holds, filled or not
fields = {"obs": FieldSpec((size,), np.uint8)}
def peak_mb():  # this process's high-water mark (ru_maxrss would include the parent's, from before the exec)
    return int(next(line for line in open("/proc/self/status") if line.startswith("VmHWM")).split()[1]) // 1024
if sys.argv[1] == "save":
    replay = ReplayBuffer(1, capacity, fields, seed=0)
    replay.add({"obs": np.broadcast_to((np.arange(rows) % 251).astype(np.uint8)[None, :, None], (1, rows, size))})
    save_checkpoint(Path(sys.argv[2]), rows, {"replay": replay.state_dict()}, keep=1)
else:
    replay = ReplayBuffer(1, capacity, fields, seed=0)  # its rows are not touched until loaded
    before = peak_mb()
    replay.load_state_dict(load_checkpoint(next(Path(sys.argv[2]).glob("step_*")))["replay"])
    assert replay.storage()["obs"][0, 1234, 7] == 1234 % 251
    print(before, peak_mb())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
@pytest.mark.parametrize("capacity", [50_000, 200_000])
def test_a_resume_holds_one_copy_of_the_replay(tmp_path, capacity):
    """The replay's rows go from the checkpoint's file into the buffer a chunk at a time: the
    resume's peak grows by about the replay's filled rows (200 MB), where reading every array
    first took two; a young run's unfilled capacity (600 MB more at 200k rows) stays untouched."""
    subprocess.run([sys.executable, "-c", RESUME_PEAK, "save", str(tmp_path), str(capacity)], check=True)
    out = subprocess.run([sys.executable, "-c", RESUME_PEAK, "load", str(tmp_path), str(capacity)], check=True, capture_output=True, text=True)
    before, after = map(int, out.stdout.split())
    assert 195 <= after - before < 260, (before, after)


def test_a_loaded_state_with_streamed_rows_can_be_written_again(tmp_path):
    write_tree(tmp_path / "first", {"data": [np.arange(12).reshape(3, 4)]})
    write_tree(tmp_path / "second", read_tree(tmp_path / "first", stream="data"))
    np.testing.assert_array_equal(read_tree(tmp_path / "second")["data"][0], np.arange(12).reshape(3, 4))


def test_compressed_trees_deflate_the_arrays_it_shrinks_and_store_the_others(tmp_path):
    """Grid images and rewards deflate to a fraction; float noise (continuous observations)
    barely does, and is stored as it is: the save skips deflate's time where it gains little."""
    rng = np.random.default_rng(0)
    tree = {
        "images": (rng.random((8192, 7, 7, 5)) < 0.1).astype(np.uint8),
        "noise": rng.standard_normal((4096, 128)).astype(np.float32),
        "small": rng.standard_normal(16).astype(np.float32),
    }
    write_tree(tmp_path / "state", tree, compress=True)
    with zipfile.ZipFile(tmp_path / "state.npz") as archive:
        methods = [info.compress_type for info in archive.infolist()]
    assert methods == [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]
    back = read_tree(tmp_path / "state")
    for key, array in tree.items():
        np.testing.assert_array_equal(back[key], array)
    write_tree(tmp_path / "plain", tree)
    with zipfile.ZipFile(tmp_path / "plain.npz") as archive:
        assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_STORED}

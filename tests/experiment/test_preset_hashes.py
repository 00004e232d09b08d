"""A preset's config hash names its run directories (runs/<preset>-<hash>/): a change that
moves it orphans every run a user has of it. The recorded hashes must stay; a new config
key joins the hash only when set (identity.HASHED_WHEN_SET). Record a new preset's hash by
adding it to preset_hashes.json."""

import json
from pathlib import Path

from relayrl.experiment.presets import PRESETS, load_preset


def test_recorded_preset_hashes_are_unchanged():
    recorded = json.loads((Path(__file__).parent / "preset_hashes.json").read_text())
    assert len(recorded) >= 290
    moved = {name: (value, load_preset(name).config_hash()) for name, value in recorded.items() if name in PRESETS and load_preset(name).config_hash() != value}
    assert not moved, f"config hashes moved (recorded, now): {moved}"
    assert set(recorded) <= set(PRESETS), f"recorded presets that no longer exist: {sorted(set(recorded) - set(PRESETS))}"

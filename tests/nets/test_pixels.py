"""The screens torso: P parameter sets in one grouped convolution, each set computing what
a torso of its own would, over any leading axes, 8-bit intensities scaled to [0, 1]."""

import pytest
import torch

from relayrl.nets.pixels import NATURE_WIDTH, NatureTorso


def test_each_set_computes_what_a_torso_of_its_own_would():
    torch.manual_seed(0)
    sets = NatureTorso(3, (84, 84, 4), pixels=True)
    screens = torch.randint(0, 256, (3, 5, 84, 84, 4), dtype=torch.uint8)
    out = sets(screens)
    assert out.shape == (3, 5, NATURE_WIDTH)
    for k in range(3):
        alone = NatureTorso(1, (84, 84, 4), pixels=True)
        taken = {}
        for i, conv in enumerate(sets.convs):
            rows = conv.weight.shape[0] // 3
            taken[f"convs.{i}.weight"], taken[f"convs.{i}.bias"] = conv.weight[k * rows : (k + 1) * rows], conv.bias[k * rows : (k + 1) * rows]
        taken["linear.weight"], taken["linear.bias"] = sets.linear.weight[k : k + 1], sets.linear.bias[k : k + 1]
        alone.load_state_dict(taken)
        torch.testing.assert_close(alone(screens[k : k + 1]), out[k : k + 1], rtol=1e-5, atol=1e-5)


def test_leading_axes_and_pixel_scaling():
    torch.manual_seed(0)
    torso = NatureTorso(2, (40, 44, 2), pixels=True)
    screens = torch.randint(0, 256, (2, 3, 4, 40, 44, 2), dtype=torch.uint8)
    out = torso(screens)
    assert out.shape == (2, 3, 4, NATURE_WIDTH)
    as_read = NatureTorso(2, (40, 44, 2), pixels=False)  # other observations are read as they are
    as_read.load_state_dict(torso.state_dict())
    assert torch.equal(out, as_read(screens.float() / 255.0))
    assert not torch.allclose(out, as_read(screens))
    torch.testing.assert_close(out[:, 1], torso(screens[:, 1]))


def test_screens_too_small_or_flat_are_refused():
    with pytest.raises(ValueError, match="at least 36 x 36 pixels; these are 30 x 84"):
        NatureTorso(1, (30, 84, 4), pixels=True)
    with pytest.raises(ValueError, match=r"screens H x W x C; these observations are \(16,\)"):
        NatureTorso(1, (16,), pixels=True)

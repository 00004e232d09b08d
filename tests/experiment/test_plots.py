"""Curve aggregation across seeds that have reached different steps."""

import numpy as np
import pytest

from relayrl.core.errors import RelayRLError
from relayrl.experiment.plots import aggregate, curve_names, plot_runs, seeds_label, summary_table


def _rows(values: list[float], every: int = 1000) -> list[dict[str, float]]:
    return [{"env_steps": float((i + 1) * every), "eval_reward_mean": v} for i, v in enumerate(values)]


def test_aggregate_keeps_steps_that_only_some_seeds_reached():
    runs = [_rows([1.0, 2.0, 3.0, 4.0]), _rows([3.0, 4.0]), _rows([5.0, 6.0, 7.0])]
    steps, mean, std, count = aggregate(runs, "eval_reward_mean", bin_size=1000)
    assert steps.tolist() == [1000, 2000, 3000, 4000]
    assert count.tolist() == [3, 3, 2, 1]
    assert mean.tolist() == pytest.approx([3.0, 4.0, 5.0, 4.0])
    assert std[2] == pytest.approx(2.0) and std[3] == 0.0


def test_aggregate_of_nothing_is_empty():
    steps, mean, std, count = aggregate([[], _rows([])], "eval_reward_mean", bin_size=1000)
    assert len(steps) == len(mean) == len(std) == len(count) == 0


def test_label_says_where_seeds_drop_out():
    steps, count = np.array([10_000, 20_000, 30_000]), np.array([3, 3, 2])
    assert seeds_label("TD3", steps, count) == "TD3 (3 seeds to 20k, 2 to 30k)"
    assert seeds_label("TD3", steps, np.array([2, 2, 2])) == "TD3 (2 seeds)"
    assert seeds_label("TD3", steps[:1], np.array([1])) == "TD3 (1 seed)"


def test_plot_runs_draws_unequal_seeds(tmp_path):
    experiment = tmp_path / "pursuit-ddqn-0123abcd"
    for seed, n in ((0, 6), (1, 3)):
        (experiment / str(seed)).mkdir(parents=True)
        lines = ["env_steps,eval_reward_mean"] + [f"{(i + 1) * 8000},{i}" for i in range(n)]
        (experiment / str(seed) / "metrics.csv").write_text("\n".join(lines) + "\n")
    out = plot_runs([experiment], tmp_path / "curve.png", key="eval_reward_mean", alpha=None)
    assert out.stat().st_size > 0
    with pytest.raises(RelayRLError, match="no 'missing' values"):
        plot_runs([experiment], tmp_path / "none.png", key="missing")


def test_curves_and_rows_of_one_preset_are_named_by_the_config_keys_that_differ(tmp_path):
    """Two bandwidths of one preset are told apart by their key, in curves and in tables;
    runs of one config by their hash; a run directory of one seed by its experiment."""
    made = {}
    for hash_, bandwidth in (("aaaa1111", 0.01), ("bbbb2222", 0.1), ("cccc3333", 0.1)):
        run = tmp_path / f"pursuit-super-quantile-{hash_}" / "0"
        run.mkdir(parents=True)
        (run / "metrics.csv").write_text("env_steps,episode_reward_mean\n8000,1\n")
        (run / "config.yaml").write_text(f"preset: pursuit-super-quantile\nseed: 0\nsharing: {{select: quantile, bandwidth: {bandwidth}}}\n")
        made[hash_] = run
    other = tmp_path / "pursuit-ddqn-dddd4444"
    assert curve_names([made["aaaa1111"].parent, made["bbbb2222"], other]) == [
        "pursuit-super-quantile sharing.bandwidth=0.01", "pursuit-super-quantile sharing.bandwidth=0.1", "pursuit-ddqn"]
    assert curve_names([made["bbbb2222"].parent, made["cccc3333"].parent]) == ["pursuit-super-quantile bbbb2222", "pursuit-super-quantile cccc3333"]
    table = summary_table([made["aaaa1111"], made["bbbb2222"].parent], at=8000)
    assert "| pursuit-super-quantile-aaaa1111/0 (sharing.bandwidth=0.01) | 1 |" in table
    assert "| pursuit-super-quantile-bbbb2222 (sharing.bandwidth=0.1) | 1 |" in table

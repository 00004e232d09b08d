"""``plugins``: a user's modules that register algorithms, envs (with config sections of
their own) and selection rules, imported before the config is read, in every process of the
run: the Python API, the command line and ``relayrl resume`` (from the saved config), and
Ray's actors (``tests/arena/test_ray_runners.py``)."""

import sys

import pytest

from relayrl.core.errors import ConfigError
from relayrl.experiment import build_config, build_run

PLUGIN = "testenvs.plugin"
RUN = {
    "plugins": [PLUGIN],
    "env": {"name": "hall", "num_envs": 2, "settings": {"size": 3}},
    "dqn": {"algo": "dqn-plugin", "learning_starts": 60, "buffer_size": 500, "batch_size": 8},
    "model": {"hiddens": [16], "head_hidden": 16},
    "sharing": {"select": "quantile-plugin", "bandwidth": 0.5},
    "total_steps": 200,
    "report_interval": 100,
    "eval": {"interval": 0},
}


@pytest.fixture(autouse=True)
def unload(unload_plugins):
    return unload_plugins


def test_a_plugin_registers_what_the_config_names_before_it_is_read():
    config = build_config(RUN)
    assert type(config.env).__name__ == "HallSection" and config.env.settings.size == 3
    assert build_config(config.model_dump(mode="json")) == config  # its dump reads back, the plugin's section included
    run = build_run(config, None, verbose=False)
    try:
        rows = run.train()
    finally:
        run.close()
    assert rows[-1]["updates"] > 0


def test_a_plugins_section_keeps_its_error_paths_and_a_missing_plugin_is_named(unload):
    with pytest.raises(ConfigError, match=r"env\.settings\.size: Input should be greater than or equal to 2 \(got 1\)"):
        build_config({**RUN, "env": {"name": "hall", "settings": {"size": 1}}})
    with pytest.raises(ConfigError, match=r"env\.settings\.width: Extra inputs are not permitted \(got 1\) -- unknown key; allowed here: runners, size"):
        build_config({**RUN, "env": {"name": "hall", "settings": {"width": 1}}})
    unload()
    with pytest.raises(ConfigError, match=r"unknown env 'hall'"):
        build_config({key: value for key, value in RUN.items() if key != "plugins"})
    with pytest.raises(ConfigError, match=r"plugins: my_missing_plugin cannot be imported \(No module named 'my_missing_plugin'\): put "
                                          r"my_missing_plugin.py in the working directory"):
        build_config({**RUN, "plugins": ["my_missing_plugin"]})


def test_the_command_line_trains_and_resumes_with_the_plugins_its_config_names(tmp_path, monkeypatch, unload):
    """``relayrl resume`` in a fresh process reads the saved config's plugins: the plugin is
    unloaded between the two commands."""
    import yaml

    from relayrl.cli import main

    (tmp_path / "run.yaml").write_text(yaml.safe_dump({**RUN, "total_steps": 100, "checkpoint_interval": 100}))
    monkeypatch.chdir(tmp_path)
    assert main(["train", "run.yaml", "--out", "runs"]) == 0
    unload()
    (run_dir,) = (tmp_path / "runs").glob("*/0")
    assert main(["resume", str(run_dir), "total_steps=200"]) == 0
    assert (run_dir / "metrics.csv").read_text().count("\n") == 3  # the header and the rows at 100 and 200 env steps


def test_a_scripts_own_registrations_are_refused_before_ray_starts(tmp_path):
    """Ray's actors import the modules that registered entries; a script's body is not one."""
    import subprocess

    script = tmp_path / "my_script.py"
    script.write_text(
        "from relayrl.experiment import build_config, build_run\n"
        "from relayrl.sharing.selectors import SELECTORS\n"
        "SELECTORS.add('my-rule', SELECTORS['quantile'])\n"
        "config = build_config({'env': {'name': 'corridor', 'settings': {'n_agents': 2}}, 'sharing': {'select': 'my-rule'}, 'total_steps': 100,\n"
        "                       'backend': {'kind': 'ray', 'runners': 1}})\n"
        "build_run(config, None, verbose=False).train()\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "ConfigError: selection mode 'my-rule' was registered in the script itself (__main__), which Ray's actors cannot import" in done.stderr
    assert "Started a local Ray instance" not in done.stderr


@pytest.mark.parametrize(
    ("plugins", "source", "message"),
    [
        (["my_plugin.py"], None, r"plugins: my_plugin.py is a file name: give the module's, my_plugin"),
        (["my-plugin"], None, r"plugins: my-plugin is not a Python module name .*: rename my-plugin.py to my_plugin.py and give my_plugin"),
        ({"a": 1}, None, r"plugins: a list of module names, e.g. \[my_algos\], not \{'a': 1\}"),
        (["broken_plugin"], "from relayrl.algos import ALGORITHMS\nALGORITHMS.add('x-dqn', ALGORITHMS['dqn'])\nALGORITHMS['tdd3']\n",
         r"plugins: importing broken_plugin raised KeyError: .*unknown algorithm 'tdd3'.* \(.*broken_plugin.py, line 3\)"),
        (["needy_plugin"], "import some_package_not_installed\n", r"plugins: needy_plugin imports some_package_not_installed, which is not installed"),
    ],
)
def test_a_plugin_that_is_not_a_module_or_does_not_import_is_the_one_error_said(tmp_path, monkeypatch, plugins, source, message):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    if source is not None:
        (tmp_path / f"{plugins[0]}.py").write_text(source)
    with pytest.raises(ConfigError, match=message) as refused:
        build_config({"plugins": plugins, "env": {"name": "not-an-env-yet"}})
    assert "unknown env" not in str(refused.value)  # the plugin's error alone, not what follows from it
    from relayrl.algos import ALGORITHMS

    assert "x-dqn" not in ALGORITHMS  # a failed import leaves nothing registered: fixed, it imports again
    if source is not None and "tdd3" in source:
        (tmp_path / "broken_plugin.py").write_text(source.replace("ALGORITHMS['tdd3']\n", ""))
        assert build_config({"plugins": plugins, "dqn": {"algo": "x-dqn"}}).dqn.algo == "x-dqn"
        ALGORITHMS.remove("x-dqn")
        sys.modules.pop("broken_plugin")


def test_a_plugin_given_as_one_name_and_a_forgotten_plugin_are_said():
    assert build_config({**RUN, "plugins": PLUGIN}).plugins == [PLUGIN]
    with pytest.raises(ConfigError, match=r"an env your module adds to relayrl's ENVS needs that module in the config's plugins"):
        build_config({"env": {"name": "not-registered"}})


def test_a_registry_refuses_what_is_not_its_kind_of_entry(register):
    from relayrl.algos import ALGORITHMS
    from relayrl.envs.corridor import CorridorSection
    from relayrl.envs.registry import ENVS, EnvEntry
    from relayrl.sharing.selectors import SELECTORS

    with pytest.raises(TypeError, match=r"'str-ppo' registers 'ppo', which is not a relayrl.algos.algorithm.AlgorithmEntry"):
        register(ALGORITHMS, "str-ppo", "ppo")
    with pytest.raises(TypeError, match=r"'my-rule' registers .*, which is not a relayrl.sharing.selectors.SelectionRule"):
        register(SELECTORS, "my-rule", lambda params: None)
    with pytest.raises(TypeError, match=r"env 'lane' registers .*, which is not a relayrl.envs.registry.EnvEntry\(factory, section\)"):
        register(ENVS, "lane", lambda settings: None)
    with pytest.raises(TypeError, match=r"env 'lane' takes name 'corridor'|env 'lane'.s section CorridorSection takes name 'corridor', not the name it is registered under"):
        register(ENVS, "lane", EnvEntry(ENVS["corridor"].factory, CorridorSection))
    with pytest.raises(TypeError, match=r"env 'lane'.s section .* is not a subclass of relayrl.envs.section.EnvSection"):
        register(ENVS, "lane", EnvEntry(ENVS["corridor"].factory, dict))
    assert "lane" not in ENVS and "str-ppo" not in ALGORITHMS


def test_relayrl_list_shows_a_plugins_registrations(capsys):
    from relayrl.cli import main

    assert main(["list", "--plugins", PLUGIN]) == 0
    out = capsys.readouterr().out
    assert "dqn-plugin (dqn section)" in out and "hall" in out.split("environments: ")[1] and "quantile-plugin" in out
    assert main(["list", "--plugins", "my_missing_plugin"]) == 2
    assert "plugins: my_missing_plugin cannot be imported" in capsys.readouterr().err

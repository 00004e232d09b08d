"""What a run says about itself: when its learners will first update, and a warning where a
run ends before a learner updated (a budget below qmix.batch_size episodes)."""

from relayrl.experiment import build_config, build_run, load_preset


def test_a_run_says_when_learning_starts_and_warns_when_it_never_did(capsys):
    config = load_preset("predator-prey-small-qmix").model_copy(update={"total_steps": 600, "report_interval": 300})
    config = build_config({**config.model_dump(mode="json"), "eval": {"interval": 0}})
    run = build_run(config, None, verbose=True)
    rows = run.train()
    run.close()
    out, err = capsys.readouterr()
    assert "first updates: predator once its replay holds 32 episodes (qmix.batch_size)" in out
    assert rows[-1]["updates"] == 0
    assert "warning: policy 'predator' has made no update: it learns once its replay holds 32 episodes (qmix.batch_size); the run ended at env step 600" in err

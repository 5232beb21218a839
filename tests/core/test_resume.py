"""Run directories keyed by setting and seed; only a complete record of the same setting and seed is skipped."""

from __future__ import annotations

from lfabench.record import RunRecorder
from lfabench.resume import complete_record, setting_key

SETTING = {"aggregator": {"name": "bow", "params": {"n_clusters": 8, "random_state": "${seed}", "sizes": (1, 2)}},
           "dataset": {"name": "digits", "params": {}}}


def test_setting_key_depends_on_setting_and_seed_only():
    as_lists = {"aggregator": {"name": "bow", "params": {"sizes": [1, 2], "random_state": "${seed}",
                                                         "n_clusters": 8}}, "dataset": {"name": "digits", "params": {}}}
    assert setting_key(SETTING, 0) == setting_key(dict(as_lists, seed=0, cache=True), 0)
    assert setting_key(SETTING, 0) != setting_key(SETTING, 1)
    other = {**SETTING, "aggregator": {"name": "bow", "params": {"n_clusters": 16}}}
    assert setting_key(SETTING, 0) != setting_key(other, 0)


def _write(run_dir, status, seed=0, setting=SETTING):
    rec = RunRecorder(run_dir, {**setting, "seed": seed}, seed)
    rec.data["setting"] = setting
    if status == "ok":
        rec.finish_ok({"accuracy": 1.0})
    else:
        rec.finish_failed(RuntimeError("boom"))


def test_only_a_complete_record_of_the_same_setting_and_seed_counts(tmp_path):
    assert complete_record(tmp_path / "none", SETTING, 0) is None
    _write(tmp_path / "failed", "failed")
    assert complete_record(tmp_path / "failed", SETTING, 0) is None
    _write(tmp_path / "ok", "ok")
    assert complete_record(tmp_path / "ok", SETTING, 0)["status"] == "ok"
    assert complete_record(tmp_path / "ok", SETTING, 1) is None
    assert complete_record(tmp_path / "ok", {"aggregator": {"name": "vlad", "params": {}}}, 0) is None
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "result.json").write_text("{not json")
    assert complete_record(tmp_path / "bad", SETTING, 0) is None


def test_a_claimed_run_directory_is_refused_to_others_and_freed_when_its_holder_ends(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    from lfabench.resume import claim_run

    run_dir = tmp_path / "run"
    with claim_run(run_dir) as mine:
        assert mine is None
        # flock claims taken through separate opens conflict even within one process
        with claim_run(run_dir) as other:
            assert other is not None and other.startswith(f"pid {os.getpid()} on ")
    with claim_run(run_dir) as again:
        assert again is None

    # a holder killed with SIGKILL leaves no stale claim
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\nfrom lfabench.resume import claim_run\n"
        f"with claim_run({str(run_dir)!r}) as h:\n    print(h, flush=True)\n    time.sleep(60)\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "None"
        with claim_run(run_dir) as other:
            assert other is not None and other.startswith(f"pid {holder.pid} on ")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with claim_run(run_dir) as after_kill:
        assert after_kill is None


def test_run_setting_resolves_every_interpolation_but_the_seed_and_the_cache_policy():
    from omegaconf import OmegaConf

    from lfabench.resume import run_setting

    def composed(k):
        return OmegaConf.create({"seed": 3, "cache": True, "k": k, "hydra": {"job": {"name": "x"}},
                                 "aggregator": {"name": "bow", "params": {"n_clusters": "${k}",
                                                                          "random_state": "${seed}",
                                                                          "cache": "${cache}"}},
                                 "dataset": {"name": "digits", "params": {}}})

    small, large = run_setting(composed(8)), run_setting(composed(64))
    assert small == {"aggregator": {"name": "bow", "params": {"n_clusters": 8, "random_state": "${seed}",
                                                              "cache": "${cache}"}},
                     "dataset": {"name": "digits", "params": {}}}
    assert large["aggregator"]["params"]["n_clusters"] == 64
    assert setting_key(small, 3) != setting_key(large, 3)
    # without other interpolations the setting is the config as written: earlier run folders keep their names
    plain = composed(8)
    plain.aggregator.params.n_clusters = 8
    as_written = OmegaConf.to_container(plain, resolve=False)
    assert run_setting(plain) == {k: as_written[k] for k in ("aggregator", "dataset")}


def test_a_record_of_other_data_is_a_dataset_change(tmp_path):
    from lfabench.resume import dataset_change

    config = {"dataset": {"name": "digits", "params": {"n_samples": 60}}, "seed": 0}
    from lfabench.registry import get_registry

    now = get_registry().get_spec("dataset", "digits").factory(n_samples=60)
    same = {"dataset": now.summary()}
    assert dataset_change(same, config) is None
    other = {"dataset": dict(now.summary(), fingerprint="0" * 64, n_samples=150)}
    message = dataset_change(other, config)
    assert message is not None and "150 samples" in message and "60 samples" in message
    assert dataset_change({"dataset": None}, config) is None  # nothing recorded: nothing to compare


def test_a_record_computed_under_another_fixed_thread_count_is_not_this_run():
    from lfabench.resume import threads_change

    assert threads_change({"determinism": {"threads": 1}}, {"seed": 0}) is None  # default threads=1
    assert threads_change({"determinism": {"threads": 1}}, {"threads": 1}) is None
    assert "threads=1" in threads_change({"determinism": {"threads": 1}}, {"threads": 4})
    assert "threads=None" in threads_change({"determinism": {"threads": None}}, {"threads": 1})
    assert threads_change({}, {"threads": 4}) is None  # older records hold no thread count


def test_a_resolver_that_needs_the_seeds_value_is_resolved_whole():
    from omegaconf import OmegaConf

    from lfabench.resume import run_setting

    OmegaConf.register_new_resolver("test_plus_one", lambda v: int(v) + 1, replace=True)
    cfg = OmegaConf.create({"seed": 3, "hydra": {"run": {"dir": "${lfabench_key:}"}},
                            "aggregator": {"name": "bow", "params": {"random_state": "${test_plus_one:${seed}}"}}})
    assert run_setting(cfg) == {"aggregator": {"name": "bow", "params": {"random_state": 4}}}

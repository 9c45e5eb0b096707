"""bench/report.py: the rows it makes from results files, the page it renders, its --check."""

from __future__ import annotations

import doctest
import json

import bench.report as report
from bench.report import RESULTS, Row, main, missed_targets, render, rows, summarise


def _worst(value, seed):
    return {"value": value, "seed": seed}


EVALUATION = {
    "summary": {
        "labelled_worst": {"all": {
            "f1_grouped": _worst(0.9333, 9857), "recall": _worst(0.9756, 9521),
            "false_alarms_per_100_path_days_grouped": _worst(0.3401, 9857),
            "false_alarms_per_100_path_days_strict": _worst(0.4535, 9743)}},
        "benign_only_worst": {"all": {
            "false_alarms_per_100_path_days_grouped": _worst(0.1134, 9929),
            "false_alarms_per_100_path_days_strict": _worst(0.2268, 9913)}},
        "targets": [{}] * 5,
        "targets_missed": [
            {"target": "F1 grouped >= 0.95", "kind": "route_change", "worst": 0.8, "seed": 9307, "limit": 0.95},
            {"target": "F1 grouped >= 0.95", "kind": "no_data", "worst": 0.6667, "seed": 9203, "limit": 0.95},
            {"target": "rising loss found before 0.1 % (loss at detection, %)", "kind": "rising_loss",
             "worst": 0.3094, "seed": 9857, "limit": 0.1}],
        "failed_seeds": [],
    },
    "labelled_seeds": [9101, 9203], "benign_only_seeds": [9901], "cadences": [],
    "code": {"head": "9f6b3ad", "uncommitted_code": []},
}


def test_an_evaluation_row_gives_the_worst_seed_of_each_figure_and_the_missed_targets():
    row = summarise("evaluation", EVALUATION)
    assert row.benchmark == "evaluation" and row.recorded == "9f6b3ad"
    assert row.headline == (
        "Worst seed, all kinds (2 labelled + 1 benign-only seeds): F1 grouped 0.93 (s9857), recall 0.98 (s9521), "
        "false alarms per 100 path-days 0.34 (s9857) grouped / 0.45 (s9743) strict; benign-only 0.11 (s9929) / "
        "0.23 (s9913)")
    assert row.target == ("3 of 5 missed: F1 grouped >= 0.95: 2 kinds, worst no_data 0.67 (s9203); "
                          "rising loss found before 0.1 %: rising_loss 0.31 % (s9857)")


def test_the_sparse_evaluation_names_its_cadences_and_a_clean_run_says_all_met():
    data = json.loads(json.dumps(EVALUATION))
    data["cadences"] = ["throughput_s=21600"]
    data["summary"]["targets_missed"] = []
    data["code"]["uncommitted_code"] = ["streaming/ordering.py"]
    row = summarise("evaluation-sparse", data)
    assert row.benchmark == "evaluation-sparse"
    assert "seeds, cadences throughput_s=21600)" in row.headline
    assert row.target == "all 5 met"
    assert row.recorded == "9f6b3ad + uncommitted changes"


def test_a_missed_target_in_seconds_reads_in_days():
    assert missed_targets([{"target": "diurnal saturation within 3 days (s)", "kind": "diurnal_saturation",
                            "worst": 4 * 86400, "seed": 9631, "limit": 3 * 86400}]) == \
        "diurnal saturation within 3 days: diurnal_saturation 4.0 days (s9631)"


def test_detect_row():
    row = summarise("detect", {"per_s": 107000, "target_per_s": 100000, "meets_target": True,
                               "hosts": 7, "days": 21, "seed": 7})
    assert row == Row("detect", "107,000 observations/s through every detector (7 hosts × 21 days, seed 7)",
                      "100,000/s: met")


def test_faults_row_reads_annotated_keys_and_says_a_partial_run_did_not_check_its_end():
    outcome = {"fault": "kill_kafka", "down_s (fault → recovery step done, ±4 s)": 33,
               "caught_up_s_after_recovery": 75.2, "reconciled_by_id": True}
    data = {"status": "partial: stopped early",
            "input": {"rate_per_s": 570.0, "outage_s (PostgreSQL and RT stopped)": 300, "kill_down_s": 30},
            "faults": [outcome, {**outcome, "fault": "stop_rt", "down_s (fault → recovery step done, ±4 s)": 320,
                                 "reconciled_by_id": False}],
            "kill_collector": {"lost": 0, "duplicated": 0}}
    row = summarise("faults", data)
    assert row.headline == ("2 faults at 570 messages/s (kills 30 s, outages 300 s): 1 reconciled by id, down 33–320 s, "
                            "caught up 75.2–75.2 s after recovery; collector kill: 0 lost, 0 doubled")
    assert row.target == "nothing lost or doubled: not met for each fault; end checks not run (partial run)"


def test_a_complete_faults_run_is_judged_on_its_end_checks_too():
    outcome = {"down_s": 20, "caught_up_s": 40, "reconciled": True}
    data = {"input": {"rate_per_s": 400, "outage_s": 20, "kill_down_s": 20}, "faults": [outcome],
            "records_topic": {"repeated": 0, "missing": 0}, "anomalies": {"equal": False}}
    assert summarise("faults", data).target == "nothing lost or doubled: not met"
    data["anomalies"]["equal"] = True
    assert summarise("faults", data).target == "nothing lost or doubled: met"


def test_an_unknown_or_unreadable_file_still_gets_a_row_that_says_so():
    assert summarise("new_bench", {"x": 1}) == Row("new_bench", "no summary: add one to bench/report.py")
    assert summarise("detect", {"per_s": 1}).headline == "unreadable: KeyError 'hosts'"


def test_rows_follow_the_fixed_order_then_the_others_by_name():
    results = {"zeta": {}, "detect": {"per_s": 1, "target_per_s": 2, "meets_target": False, "hosts": 1,
                                      "days": 1, "seed": 1}, "alpha": {}, "parse": {}}
    assert [row.benchmark for row in rows(results)] == ["parse", "detect", "alpha", "zeta"]


def test_render_says_it_is_generated_and_escapes_pipes():
    page = render([Row("x", "a | b", "met", "abc1234")])
    assert "Generated by `.venv/bin/python bench/report.py`" in page
    assert page.splitlines()[-1] == "| [`x`](x.json) | a \\| b | met | abc1234 |"


def test_check_passes_on_a_fresh_page_and_fails_once_a_result_changed(tmp_path, capsys):
    (tmp_path / "detect.json").write_text(json.dumps({"per_s": 5, "target_per_s": 10, "meets_target": False,
                                                      "hosts": 2, "days": 3, "seed": 4}))
    assert main(["--results", str(tmp_path)]) == 0
    assert "5 observations/s" in (tmp_path / "README.md").read_text()
    assert main(["--results", str(tmp_path), "--check"]) == 0
    (tmp_path / "detect.json").write_text(json.dumps({"per_s": 6, "target_per_s": 10, "meets_target": False,
                                                      "hosts": 2, "days": 3, "seed": 4}))
    assert main(["--results", str(tmp_path), "--check"]) == 1
    assert "out of date" in capsys.readouterr().err


def test_every_committed_result_has_a_readable_row_and_the_table_is_current():
    table = rows(report.load(RESULTS))
    bad = [row for row in table if row.headline.startswith(("unreadable", "no summary"))]
    assert not bad, bad
    assert main(["--check"]) == 0, "bench/results/README.md is stale: run .venv/bin/python bench/report.py"


def test_docstring_examples():
    result = doctest.testmod(report)
    assert result.failed == 0 and result.attempted >= 5

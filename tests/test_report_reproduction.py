"""A campaign's reproduction sentence (envgen.report.reproduction) from its check's JSON."""

import json

from envgen.report.reproduction import reproduction_sentence


def _run(row, trained_on, identical, through=3, metric=None):
    return {
        "row": row,
        "trained_on": trained_on,
        "identical": identical,
        "identical_through": through,
        "metric": metric,
        "updates": 3,
    }


def test_each_row_says_where_it_trained_and_how_many_repeat(tmp_path):
    data = {
        "command": "envgen rerun --check --campaign campaign_x --updates 3",
        "checked_on": "AMD EPYC, AVX512",
        "runs": [
            _run("Crafter only", "an unrecorded machine", False, 0, "losses/value"),
            _run("Crafter only", "an unrecorded machine", False, 0, "losses/entropy"),
            _run("Random", "AMD EPYC, AVX512", True),
            _run("Random", "AMD EPYC, AVX2", False, 1, "losses/clip"),
        ],
    }
    (tmp_path / "campaign_x.json").write_text(json.dumps(data))
    assert reproduction_sentence("campaign_x", tmp_path) == (
        f"Reproduction (`envgen rerun --check`, {tmp_path.as_posix()}/campaign_x.json): the "
        "first 3 updates of 4 sampled runs retrained on AMD EPYC, AVX512, all in native CPU "
        "numerics, so each repeats only on the CPU class that trained it. Crafter only: "
        "trained on an unrecorded machine, 0 of 2 bit-identical, each first differing at "
        "update 1. Random: trained on AMD EPYC, AVX2, 0 of 1 bit-identical, each first "
        "differing at update 2; trained on AMD EPYC, AVX512, 1 of 1 bit-identical."
    )


def test_a_campaign_without_a_check_says_so_and_how(tmp_path):
    assert reproduction_sentence("campaign_y", tmp_path) == (
        f"Reproduction not checked (no {tmp_path.as_posix()}/campaign_y.json; `envgen rerun "
        f"--check --campaign campaign_y --json {tmp_path.as_posix()}/campaign_y.json`)."
    )
    (tmp_path / "campaign_y.json").write_text('{"runs": []}')
    assert reproduction_sentence("campaign_y", tmp_path).startswith(
        f"Reproduction: {tmp_path.as_posix()}/campaign_y.json unreadable ("
    )


def test_portable_and_full_length_checks_say_so(tmp_path):
    runs = [
        {**_run("Random", "AMD EPYC, AVX512", True), "portable": True, "full": True},
        {**_run("Random", "Intel Xeon, AVX512", True), "portable": True, "full": True},
    ]
    data = {"checked_on": "AMD EPYC, AVX512", "runs": runs}
    (tmp_path / "campaign_p.json").write_text(json.dumps(data))
    sentence = reproduction_sentence("campaign_p", tmp_path)
    assert "all updates of 2 sampled runs" in sentence
    assert "2 of them in portable CPU numerics (any x86-64 CPU with AVX2)" in sentence

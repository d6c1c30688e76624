"""Traps of a researcher who points the designer at their own OpenAI-compatible model
(issue 66, item 2): each gives one line naming what to set, and nothing is retried that
cannot change."""

import re
from pathlib import Path

import pytest
import yaml

from envgen.errors import CacheMissError, ConfigError
from envgen.llm.conversation import AUTO
from envgen.loop.config import RunConfig
from envgen.pipeline.executor import ExecutorConfig, execute
from envgen.pipeline.job_status import CONFIG_ERROR
from envgen.pipeline.jobs import LLMSpec, Settings
from envgen.pipeline.plan import Job, plan_table
from envgen.pipeline.profile import load_profile
from envgen.results_version import RESULTS_VERSION

PARAMS = yaml.safe_load(Path("params.yaml").read_text())
OWN_MODEL = "my-lab-model"  # a model of unknown context window


def test_auto_history_for_a_model_of_unknown_context_is_refused_at_planning_in_one_line():
    smoke = load_profile(PARAMS, "smoke")  # llm_history_cycles: auto
    assert smoke.llm_history_cycles == AUTO
    row = {"row": "mine", "run": {"llm_model": OWN_MODEL}}
    with pytest.raises(ConfigError) as refused:
        plan_table({"table": "t", "rows": [row]}, smoke)
    line = str(refused.value)
    assert "\n" not in line and line.startswith("t.rows[mine].run.llm_history_cycles: auto")
    assert OWN_MODEL in line and "llm_history_cycles: <number>" in line
    assert "0 = the whole history" in line
    # The fix the line names: the row's own bound (0 included) plans.
    row["run"]["llm_history_cycles"] = 0
    job = plan_table({"table": "t", "rows": [row]}, smoke).rows[0].jobs[0]
    assert job.config.llm_history_cycles == 0


def test_a_run_of_unknown_context_under_auto_is_a_config_error_and_not_retried(tmp_path):
    config = RunConfig(llm_history_cycles=AUTO, llm_model="gpt-3.5-turbo", model="nature")
    assert config.llm_adapts
    job = Job(config, 0)
    llm = LLMSpec("replay", str(tmp_path / "cache"))
    settings = Settings(
        str(tmp_path / "runs"), {"crafter-llm": RESULTS_VERSION["crafter-llm"]}, llm=llm
    )
    result = execute([job], settings, ExecutorConfig(workers=1, retries=3), lambda _m: None)
    result = result[job.key]
    assert (result.status, result.attempts) == (CONFIG_ERROR, 1)
    assert result.reason.startswith("llm_history_cycles: auto") and "\n" not in result.reason
    assert "llm_history_cycles: <number>" in result.reason


def help_text(capsys, command: str) -> str:
    """The --help `command` prints (`envgen run`, `envgen llm record`, the train stage)."""
    from envgen.cli import build_parser
    from envgen.pipeline import train

    words = command.split()[1:] + ["--help"]
    with pytest.raises(SystemExit):
        if command.startswith("envgen "):
            build_parser(words).parse_args(words)
        else:
            train.main(["--help"])
    return " ".join(capsys.readouterr().out.split())  # argparse's wrapping undone


HELPS = ("envgen run", "envgen llm record", "python -m envgen.pipeline.train")


@pytest.mark.parametrize("command", HELPS)
def test_every_help_names_the_key_variables_the_code_reads(capsys, command):
    from envgen.llm.client import BACKENDS

    text = help_text(capsys, command)
    read = {b.key_variable for b in BACKENDS.values() if b.key_variable}
    named = set(re.findall(r"\b[A-Z][A-Z0-9_]*_KEY\b", text))
    assert named and named <= read, (command, named - read)
    for name in ("openai", "compatible"):  # each backend's own variable, where it is named
        assert BACKENDS[name].key_variable in text, (command, name)


def test_replay_through_the_compatible_backend_needs_no_server_url():
    """Replay never connects, so `--base-url` is asked for only where calls go out."""
    from argparse import Namespace

    from envgen.loop.cli import _backend

    def args(mode: str) -> Namespace:
        return Namespace(backend="compatible", base_url=None, llm_mode=mode)

    replaying = _backend(args("replay"), OWN_MODEL)
    assert (replaying.name, replaying.model, replaying.base_url) == ("compatible", OWN_MODEL, None)
    for mode in ("fill", "record", "live"):
        with pytest.raises(ConfigError) as refused:
            _backend(args(mode), OWN_MODEL)
        line = str(refused.value)
        assert "\n" not in line
        assert line.startswith("base_url: backend 'compatible' needs --base-url")


def test_envgen_run_replays_a_compatible_models_rows_without_a_server_url(tmp_path, capsys):
    """End to end: the run gets to the cache (a miss here) instead of asking for a URL."""
    from envgen.cli import main

    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({"llm_model": OWN_MODEL, "model": "nature"}))
    cache, runs = str(tmp_path / "cache"), str(tmp_path / "runs")
    argv = ["run", str(config), "--seed", "0", "--backend", "compatible"]
    assert main([*argv, "--cache-dir", cache, "--runs-root", runs]) == 1
    out = capsys.readouterr().out
    assert f"no recorded reply for model {OWN_MODEL!r}" in out and "base_url" not in out
    assert f"envgen llm record --backend compatible --model {OWN_MODEL} --base-url URL" in out


def test_every_command_that_calls_a_model_defaults_to_the_local_backend():
    """One default (`DEFAULT_BACKEND`, offline): a call to any other model goes out only
    through a backend named on purpose; replay keys each model as its replies were
    recorded, so no committed reply changes its key."""
    from argparse import Namespace

    from envgen.cli import build_parser
    from envgen.llm.client import DEFAULT_BACKEND, LOCAL_MODELS, replay_backend
    from envgen.loop.cli import _backend
    from envgen.pipeline import train

    assert DEFAULT_BACKEND == "local"
    record = build_parser(["llm", "record"]).parse_args(["llm", "record"])
    assert record.backend == DEFAULT_BACKEND
    assert train.build_parser().parse_args(["t.yaml"]).backend == DEFAULT_BACKEND

    def run(model: str, mode: str) -> str:
        return _backend(Namespace(backend=None, base_url=None, llm_mode=mode), model).name

    for model in LOCAL_MODELS:
        assert run(model, "fill") == run(model, "replay") == DEFAULT_BACKEND
    assert run("gpt-4-1106-preview", "replay") == replay_backend("gpt-4-1106-preview") == "openai"
    with pytest.raises(ConfigError) as refused:  # was: an uncapped call to OpenAI
        run("gpt-4-1106-preview", "fill")
    line = str(refused.value)
    assert "\n" not in line
    assert line.index("--backend compatible") < line.index("--backend openai")


def test_miss_advice_names_the_compatible_route_before_openai(tmp_path, capsys):
    from argparse import Namespace

    from envgen.llm.cache import CachedLLM
    from envgen.llm.client import backend_config
    from envgen.llm.conversation import EnvironmentDesigner, PromptOptions
    from envgen.loop.cli import _fill_advice

    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({"llm_model": OWN_MODEL}))
    advice = _fill_advice(Namespace(config=config, seed=0, runs_root=tmp_path))
    assert advice.index("--backend compatible --base-url URL") < advice.index("--backend openai")
    llm = CachedLLM("replay", tmp_path / "cache", backend_config("openai", model=OWN_MODEL))
    with pytest.raises(CacheMissError) as missed:
        EnvironmentDesigner(PromptOptions(), llm).generate(4)
    text = str(missed.value)
    first = f"envgen llm record --backend compatible --model {OWN_MODEL} --base-url URL"
    assert first in text and text.index(first) < text.index("--backend openai")


def test_record_help_and_miss_advice_name_the_one_command_that_records_a_whole_run(
    tmp_path, capsys
):
    """`envgen llm record` records first calls only; its help and `envgen run`'s miss
    advice name the command that records a run's first and adaptation calls at once
    (docs/llm.md, "Your own model"; tests/test_own_model_walkthrough.py follows it)."""
    from argparse import Namespace

    from envgen.loop.cli import _fill_advice

    text = help_text(capsys, "envgen llm record")
    one_command = "envgen run CONFIG.yaml --seed K --llm-mode fill \\ --backend compatible"
    assert one_command in text and "--base-url URL" in text
    assert "first and adaptation calls" in text and '"Your own model"' in text
    assert "python -m envgen.pipeline.train TABLE.yaml --llm-mode fill" in text
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({"llm_model": OWN_MODEL}))
    advice = _fill_advice(Namespace(config=config, seed=0, runs_root=tmp_path))
    assert "first and adaptation calls, in one command" in advice
    assert f"envgen run {config} --seed 0 --resume --runs-root {tmp_path} --llm-mode fill" in advice


def test_a_structured_run_replays_and_advises_with_the_dialect_it_recorded_in(tmp_path, capsys):
    """`--structured` writes the prompt and the request, so the cache key: a replay
    without it misses; the miss's advice, and each record command it names, ask in the
    same dialect, so what they record is what the replay looks up."""
    from envgen.cli import main
    from envgen.llm.client import BACKENDS, backend_config

    assert backend_config("compatible", model=OWN_MODEL, base_url="http://h/v1").record_flags() == (
        f"--backend compatible --model {OWN_MODEL} --base-url http://h/v1"
    )
    asking = backend_config("compatible", model=OWN_MODEL, structured="json_schema", calls=False)
    assert asking.record_flags().endswith("--base-url URL --structured json_schema")
    assert BACKENDS["local"].record_flags() == "--backend local"  # its preset: json_object
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({"llm_model": OWN_MODEL, "model": "nature"}))
    cache, runs = str(tmp_path / "cache"), str(tmp_path / "runs")
    argv = ["run", str(config), "--seed", "0", "--structured", "json_schema"]
    assert main([*argv, "--cache-dir", cache, "--runs-root", runs]) == 1
    out = capsys.readouterr().out
    assert (
        f"envgen llm record --backend compatible --model {OWN_MODEL} --base-url URL "
        "--structured json_schema --call crafter/initial/n4/set0" in out
    )
    assert "--llm-mode fill --structured json_schema --backend compatible" in out

"""`envgen llm verify|show` on the committed cache, through the real argument parser."""

import argparse

from envgen.llm import cli


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="envgen")
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["llm", *argv])
    return args.func(args)


def test_verify_and_show_the_committed_cache(capsys):
    assert _run("verify") == 0
    assert "cache files verified" in capsys.readouterr().out
    assert _run("show") == 0
    listing = capsys.readouterr().out
    assert "crafter/initial/n4/set0" in listing and "unusable" not in listing


def test_verify_fails_on_a_bad_file(tmp_path, capsys):
    (tmp_path / ("a" * 64 + ".json")).write_text("{}")
    assert _run("verify", "--cache-dir", str(tmp_path)) == 1
    assert "unreadable cache file" in capsys.readouterr().err


def test_record_refuses_a_temperature_out_of_range_before_any_call(tmp_path, capsys):
    code = _run(
        "record", "--backend", "compatible", "--model", "m", "--base-url",
        "http://127.0.0.1:9/v1", "--temperature", "2.5", "--cache-dir", str(tmp_path),
    )  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--temperature" in err and "0..2" in err
    assert list(tmp_path.iterdir()) == []

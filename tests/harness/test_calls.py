"""send_calls' bookkeeping with a scripted client: worker processes, crashes, parse retries."""

import os
from types import SimpleNamespace

import pytest

from benchforge_harness.calls import Call, SampleLog, auto_workers, send_calls
from benchforge_harness.parsing import ParseError


class ScriptedClient:
    """Answers each request with reply(messages); `crash_on` makes the process die on that key's request."""

    def __init__(self, reply, crash_on=None, max_concurrency=2):
        self.endpoints = {"e": SimpleNamespace(max_concurrency=max_concurrency, identity=("scripted", "e", "e"))}
        self.reply = reply
        self.crash_on = crash_on
        self.calls = 0

    @property
    def usage(self):
        return {"e": {"calls": self.calls}}

    def chat_many(self, endpoint, requests, on_result=None):
        results = []
        for index, (messages, _) in enumerate(requests):
            if self.crash_on and self.crash_on in messages[0]["content"]:
                os._exit(3)
            self.calls += 1
            result = SimpleNamespace(text=self.reply(messages), cached=False, finish_reason="stop")
            results.append(result)
            on_result(index, result)
        return results


def number_call(key: str) -> Call:
    def parse(text):
        if not text.isdigit():
            raise ParseError(f"{text!r} is not a number")
        return {"value": int(text)}

    return Call(
        key=key,
        build=lambda: [{"role": "user", "content": key}],
        meta={"id": key},
        parse=parse,
        retry=lambda problem: f"numbers only please ({problem})",
    )


def test_parse_failures_are_retried_with_a_correction_then_recorded(tmp_path):
    def reply(messages):
        if messages[0]["content"] == "stubborn":
            return "many"
        return "7" if len(messages) > 1 else "seven"  # right only after the correction

    client = ScriptedClient(reply)
    log = SampleLog(tmp_path / "s.jsonl")
    stats = send_calls(client, "e", [number_call("a"), number_call("stubborn")], log, label="t", parse_retries=2)
    assert (stats.ok, stats.unparsed, stats.parse_retries, stats.usage["calls"]) == (1, 1, 3, 5)
    assert log.rows["a"]["value"] == 7 and log.rows["a"]["outputs"] == ["seven", "7"]
    assert log.rows["stubborn"]["status"] == "unparsed" and "not a number" in log.rows["stubborn"]["parse_error"]


def test_workers_share_the_jobs_and_their_rows_come_back(tmp_path):
    log = SampleLog(tmp_path / "s.jsonl")
    calls = [number_call(f"k{i}") for i in range(10)]
    stats = send_calls(None, "e", calls, log, label="t", workers=3, reopen=lambda share: ScriptedClient(lambda m: "1"))
    assert stats.ok == 10 and stats.usage["calls"] == 10
    assert set(log.rows) == {f"k{i}" for i in range(10)}
    assert set(SampleLog(tmp_path / "s.jsonl").rows) == set(log.rows)  # a crash now would lose nothing
    log.compact(call.key for call in calls)
    assert not list(tmp_path.glob("*.part*"))
    assert (tmp_path / "s.jsonl").read_text().count("\n") == 10


def test_auto_workers_only_for_long_runs_against_wide_endpoints():
    assert auto_workers(10_000, 64, cpus=2) == 2
    assert auto_workers(10_000, 64, cpus=16) == 4  # capped
    assert auto_workers(10_000, 16, cpus=8) == 2  # at least 8 of the endpoint's slots per process
    assert auto_workers(999, 64, cpus=8) == 1  # too short to be worth a fork
    assert auto_workers(10_000, 8, cpus=8) == 1  # a narrow endpoint, not this client, is the limit
    assert auto_workers(10_000, 64, cpus=1) == 1


def test_without_fork_auto_stays_in_one_process_and_an_explicit_count_is_refused(tmp_path, monkeypatch):
    import multiprocessing

    from benchforge_harness.io import InputError

    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])  # as on Windows
    assert auto_workers(10_000, 64, cpus=8) == 1
    client = ScriptedClient(lambda m: "1", max_concurrency=64)
    calls = [number_call(f"k{i}") for i in range(1200)]
    assert (
        send_calls(client, "e", calls, SampleLog(tmp_path / "a.jsonl"), label="t", workers="auto", reopen=lambda share: 1 / 0).ok
        == 1200
    )
    with pytest.raises(InputError, match="--workers 2 needs worker processes started by fork.*use --workers 1"):
        send_calls(client, "e", calls[:10], SampleLog(tmp_path / "b.jsonl"), label="t", workers=2, reopen=lambda share: 1 / 0)


def test_workers_auto_forks_for_a_long_run_and_stays_in_process_for_a_short_one(tmp_path, monkeypatch):
    import io

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    wide = ScriptedClient(lambda m: "1", max_concurrency=64)
    stream = io.StringIO()
    short = send_calls(
        wide,
        "e",
        [number_call(f"s{i}") for i in range(10)],
        SampleLog(tmp_path / "short.jsonl"),
        label="short",
        workers="auto",
        reopen=lambda share: 1 / 0,
        progress_stream=stream,
    )
    assert short.ok == 10 and wide.calls == 10 and "worker processes" not in stream.getvalue()

    stream = io.StringIO()
    calls = [number_call(f"k{i}") for i in range(1200)]
    long = send_calls(
        wide,
        "e",
        calls,
        SampleLog(tmp_path / "long.jsonl"),
        label="long",
        workers="auto",
        reopen=lambda share: ScriptedClient(lambda m: "1", max_concurrency=64 // share),
        progress_stream=stream,
    )
    assert "long: 1200 calls over 3 worker processes" in stream.getvalue()
    assert long.ok == 1200 and long.usage["calls"] == 1200 and wide.calls == 10  # the parent's client sent none
    assert len(SampleLog(tmp_path / "long.jsonl").rows) == 1200


def test_a_worker_that_dies_is_reported_and_the_others_rows_are_kept(tmp_path):
    log = SampleLog(tmp_path / "s.jsonl")
    calls = [number_call(f"k{i}") for i in range(6)]  # worker 0 gets k0, k2, k4; worker 1 k1, k3, k5
    with pytest.raises(RuntimeError, match="exited with code 3"):
        send_calls(None, "e", calls, log, label="t", workers=2, reopen=lambda share: ScriptedClient(lambda m: "1", crash_on="k2"))
    saved = set(SampleLog(tmp_path / "s.jsonl").rows)
    assert {"k1", "k3", "k5"} <= saved and "k2" not in saved

"""The blocking client against the real nextpage binary."""

import json
import signal
import subprocess
import threading

import pytest

from nextpage import (
    InvalidDefinition, InvalidParams, MethodNotFound, NextPage, NextPageNotFound, NotNextPage, PageNotUnderstood,
    RequestCancelled, RequestTimeout, RPCError, ServerExited, UnknownCollection, UpstreamFailed,
)

FRESH = {"collection": "c", "hasNext": True, "isLoading": False, "lastId": None, "count": 0, "pages": 0, "lastError": None}


def test_items_yields_every_demo_item_once_in_order(binary, version, workdir):
    with NextPage(binary) as np:
        assert np.server_info == {"name": "nextpage", "version": version}
        assert [item["id"] for item in np.items("demo")] == list(range(1, 251))
        assert np.status("demo")["count"] == 250


def test_pages_follow_the_cursor_to_the_end(binary, workdir):
    with NextPage(binary) as np:
        pages = list(np.pages("demo"))
        assert [page["page"] for page in pages] == list(range(1, 11))
        assert [page["hasNext"] for page in pages] == [True] * 9 + [False]
        assert pages[0]["lastId"] == "page-2" and pages[-1]["lastId"] is None
        # restart: load (a reset) first, so the walk starts again.
        assert next(np.pages("demo", restart=True))["items"][0]["id"] == 1


def test_the_typed_methods(binary, workdir):
    with NextPage(binary) as np:
        assert np.load_next("demo")["count"] == 25
        assert [item["id"] for item in np.item_slice("demo", offset=10, limit=2)["items"]] == [11, 12]
        assert np.load("demo")["page"] == 1
        assert np.reset("demo")["count"] == 0
        assert [state["collection"] for state in np.collections()] == ["demo"]
        assert np.define("copy", {"source": {"type": "file", "dir": str(workdir)},
                                  "paging": {"strategy": "cursor"}})["collection"] == "copy"


def test_error_replies_raise_the_class_of_their_code_with_data(binary, workdir):
    with NextPage(binary) as np:
        with pytest.raises(UnknownCollection) as unknown:
            np.status("nope")
        assert unknown.value.code == -32001
        assert unknown.value.data == {"collection": "nope", "known": ["demo"]}
        assert unknown.value.method == "status"
        with pytest.raises(MethodNotFound) as missing:
            np.call("noSuchMethod")
        assert missing.value.code == -32601 and missing.value.data == {"method": "noSuchMethod"}
        with pytest.raises(InvalidParams) as bad:
            np.item_slice("demo", offset="ten")
        assert bad.value.code == -32602 and bad.value.data["field"] == "offset"
        with pytest.raises(InvalidDefinition) as invalid:
            np.define("x", {"source": {"type": "file", "dir": "."}, "paging": {"strategy": "curser"}})
        assert invalid.value.code == -32004 and invalid.value.data["field"] == "paging.strategy"
        assert isinstance(invalid.value, RPCError)
        # The server keeps serving.
        assert np.load_next("demo")["page"] == 1


def test_upstream_errors_carry_their_data(binary, workdir):
    (workdir / "empty").mkdir()
    (workdir / "bad").mkdir()
    (workdir / "bad" / "first.json").write_text('{"items": [1,')
    config = workdir / "broken.json"
    config.write_text(json.dumps({"collections": {
        "missing": {"source": {"type": "file", "dir": "empty"}, "paging": {"strategy": "cursor"}},
        "garbled": {"source": {"type": "file", "dir": "bad"}, "paging": {"strategy": "cursor"}},
    }}))
    with NextPage(binary, ["--config", str(config)]) as np:
        with pytest.raises(UpstreamFailed) as failed:
            np.load_next("missing")
        assert failed.value.code == -32002 and failed.value.data["collection"] == "missing"
        with pytest.raises(PageNotUnderstood) as garbled:
            np.load_next("garbled")
        assert garbled.value.code == -32003 and garbled.value.data["collection"] == "garbled"
        assert "line" in garbled.value.data


def test_load_all_reports_pages_and_progress_through_callbacks(binary, workdir):
    with NextPage(binary) as np:
        pages, progress, seen = [], [], []
        stop = np.on("page", lambda params: seen.append(params["page"]))
        result = np.load_all("demo", max_pages=3, on_page=pages.append, on_progress=progress.append)
        assert result == {"collection": "demo", "pages": 3, "count": 75, "hasNext": True, "lastId": "page-4"}
        assert [page["page"] for page in pages] == [1, 2, 3]
        assert [value["kind"] for value in progress] == ["begin", "report", "report", "report", "end"]
        assert progress[-1]["count"] == 75
        stop()
        np.load_all("demo", max_pages=1)
        assert seen == [1, 2, 3], "a callback that was stopped hears nothing more"


def test_cancel_ends_a_call_in_flight(binary, blocked):
    with NextPage(binary, blocked.args) as np:
        call = np.start("loadNext", {"collection": "c"})
        blocked.wait_for_reader()
        call.cancel()
        with pytest.raises(RequestCancelled) as cancelled:
            call.result()
        assert cancelled.value.code == -32800
        assert np.status("c") == FRESH
        blocked.release()
        assert [item["id"] for item in np.items("c")] == [1, 2, 3]


def test_a_call_that_times_out_is_cancelled_on_the_server(binary, blocked):
    with NextPage(binary, blocked.args) as np:
        with pytest.raises(RequestTimeout):
            np.call("loadNext", {"collection": "c"}, timeout=0.2)
        blocked.release()
        # Not cancelled, the call would have landed the first page and this would start at the second.
        assert [item["id"] for item in np.items("c")] == [1, 2, 3]


def test_a_server_killed_mid_call_raises_instead_of_hanging(binary, blocked):
    np = NextPage(binary, blocked.args)
    call = np.start("loadNext", {"collection": "c"})
    blocked.wait_for_reader()
    np.process.send_signal(signal.SIGKILL)
    with pytest.raises(ServerExited) as exited:
        call.result()
    assert exited.value.status == -signal.SIGKILL
    assert "killed by signal 9" in str(exited.value)
    # Later calls fail at once, with the same reason.
    with pytest.raises(ServerExited):
        np.status("c")
    assert np.close() == -signal.SIGKILL


def test_a_program_that_echoes_its_input_is_not_nextpage(workdir):
    with pytest.raises(NotNextPage, match="not a nextpage server: it sent a request"):
        NextPage("/bin/cat")


def test_a_program_that_exits_at_once_is_reported_with_its_status(workdir):
    with pytest.raises(ServerExited) as exited:
        NextPage("/bin/true")
    assert exited.value.status == 0


def test_a_server_that_cannot_start_shows_its_stderr(binary, workdir):
    lines = []
    with pytest.raises(ServerExited) as exited:
        NextPage(binary, ["--config", "missing.json"], on_stderr=lines.append)
    assert exited.value.status == 2
    assert "missing.json" in exited.value.stderr
    assert any(line.startswith("nextpage: config") for line in lines)


def test_a_missing_executable_says_how_to_get_one(workdir):
    with pytest.raises(NextPageNotFound, match="not an executable file"):
        NextPage(str(workdir / "no-such-nextpage"))


def test_close_sends_shutdown_and_exit(binary, workdir):
    np = NextPage(binary)
    np.load_next("demo")
    assert np.close() == 0
    assert np.process.returncode == 0
    assert np.close() == 0, "closing twice is harmless"


def test_attach_drives_a_process_started_elsewhere(binary, workdir):
    process = subprocess.Popen([binary, "--log-level", "warning"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    np = NextPage.attach(process.stdin, process.stdout)
    assert np.server_info["name"] == "nextpage"
    assert len(list(np.items("demo"))) == 250
    assert np.close() is None
    assert process.wait() == 0
    process.stdout.close()


def test_calls_from_many_threads_get_their_own_replies(binary, workdir):
    with NextPage(binary) as np:
        results = {}

        def ask(index):
            results[index] = np.item_slice("demo", offset=index, limit=1)["items"]

        np.load_all("demo")
        threads = [threading.Thread(target=ask, args=(index,)) for index in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert {index: items[0]["id"] for index, items in results.items()} == {index: index + 1 for index in range(20)}


def test_nextpage_from_the_environment(binary, workdir, monkeypatch):
    monkeypatch.setenv("NEXTPAGE", binary)
    with NextPage() as np:
        assert np.server_info["name"] == "nextpage"
    monkeypatch.setenv("NEXTPAGE", "no-such-nextpage-anywhere")
    with pytest.raises(NextPageNotFound, match="no 'no-such-nextpage-anywhere' on PATH"):
        NextPage()

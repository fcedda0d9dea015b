"""The asyncio client against the real nextpage binary (each test runs its own event loop)."""

import asyncio
import signal
import subprocess

import pytest

from nextpage import AsyncNextPage, NotNextPage, RequestTimeout, ServerExited, UnknownCollection

def run(coroutine):
    return asyncio.run(coroutine)


def test_items_and_pages_are_async_iterators(binary, version, workdir):
    async def main():
        async with await AsyncNextPage.spawn(binary) as np:
            assert np.server_info == {"name": "nextpage", "version": version}
            assert [item["id"] async for item in np.items("demo")] == list(range(1, 251))
            assert [page["page"] async for page in np.pages("demo", restart=True)] == list(range(1, 11))
            return np.process
    process = run(main())
    assert process.returncode == 0, "leaving the block sent shutdown and exit"


def test_typed_methods_and_errors(binary, workdir):
    async def main():
        async with await AsyncNextPage.spawn(binary) as np:
            assert (await np.load_next("demo"))["count"] == 25
            assert (await np.status("demo"))["pages"] == 1
            assert [i["id"] for i in (await np.item_slice("demo", offset=24))["items"]] == [25]
            with pytest.raises(UnknownCollection) as unknown:
                await np.load_next("nope")
            assert unknown.value.code == -32001 and unknown.value.data["known"] == ["demo"]
            assert (await np.reset("demo"))["count"] == 0
    run(main())


def test_concurrent_calls_get_their_own_replies(binary, workdir):
    async def main():
        async with await AsyncNextPage.spawn(binary) as np:
            # Queued on one collection: each call gets the next page, in order.
            pages = await asyncio.gather(*(np.load_next("demo") for _ in range(10)))
            assert [page["page"] for page in pages] == list(range(1, 11))
    run(main())


def test_load_all_callbacks(binary, workdir):
    async def main():
        async with await AsyncNextPage.spawn(binary) as np:
            pages, progress = [], []
            result = await np.load_all("demo", max_items=50, on_page=pages.append, on_progress=progress.append)
            assert result["count"] == 50 and [page["page"] for page in pages] == [1, 2]
            assert [value["kind"] for value in progress] == ["begin", "report", "report", "end"]
    run(main())


def test_cancelling_the_awaiting_task_cancels_the_request(binary, blocked):
    async def main():
        async with await AsyncNextPage.spawn(binary, blocked.args) as np:
            task = asyncio.ensure_future(np.load_next("c"))
            await asyncio.get_running_loop().run_in_executor(None, blocked.wait_for_reader)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            blocked.release()
            # The cancelled call's page never landed: the walk starts at the first page.
            assert [item["id"] async for item in np.items("c")] == [1, 2, 3]
    run(main())


def test_a_call_that_times_out_is_cancelled_on_the_server(binary, blocked):
    async def main():
        async with await AsyncNextPage.spawn(binary, blocked.args) as np:
            with pytest.raises(RequestTimeout):
                await np.call("loadNext", {"collection": "c"}, timeout=0.2)
            blocked.release()
            # Not cancelled, the call would have landed the first page and this would start at the second.
            assert [item["id"] async for item in np.items("c")] == [1, 2, 3]
    run(main())


def test_a_server_killed_mid_call_raises_instead_of_hanging(binary, blocked):
    async def main():
        np = await AsyncNextPage.spawn(binary, blocked.args)
        task = asyncio.ensure_future(np.load_next("c"))
        await asyncio.get_running_loop().run_in_executor(None, blocked.wait_for_reader)
        np.process.send_signal(signal.SIGKILL)
        with pytest.raises(ServerExited) as exited:
            await task
        assert exited.value.status == -signal.SIGKILL
        with pytest.raises(ServerExited):
            await np.status("c")
        assert await np.aclose() == -signal.SIGKILL
    run(main())


def test_not_nextpage(workdir):
    async def main():
        with pytest.raises(NotNextPage, match="not a nextpage server"):
            await AsyncNextPage.spawn("/bin/cat")
        with pytest.raises(ServerExited) as exited:
            await AsyncNextPage.spawn("/bin/true")
        assert exited.value.status == 0
    run(main())


def test_attach_to_streams(binary, workdir):
    async def main():
        process = await asyncio.create_subprocess_exec(
            binary, "--log-level", "warning", stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        np = await AsyncNextPage.attach(process.stdout, process.stdin)
        assert (await np.load_next("demo"))["page"] == 1
        await np.aclose()
        return await process.wait()
    assert run(main()) == 0

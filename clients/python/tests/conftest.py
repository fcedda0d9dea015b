"""Fixtures: the nextpage binary under test ($NEXTPAGE, else `nextpage` on PATH),
a fresh working folder per test (no nextpage.json: the built-in demo is
served), and a collection whose first page is a FIFO, so that a call is in
flight for as long as a test likes."""

import faulthandler
import json
import os
import subprocess

import pytest

from nextpage._protocol import resolve_executable

# A test that hangs (a reply that never comes) fails the run with every
# thread's stack instead of hanging it.
faulthandler.dump_traceback_later(120, exit=True)

PAGE_1 = {"items": [{"id": 1}, {"id": 2}], "next_cursor": "p2"}
PAGE_2 = {"items": [{"id": 3}], "next_cursor": None}


@pytest.fixture(scope="session")
def binary():
    return resolve_executable(None)


@pytest.fixture(scope="session")
def version(binary):
    return subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


class BlockedPage:
    """Collection "c" over file pages whose first page is a FIFO: the server's
    read of it waits until the test gives the page."""

    def __init__(self, folder):
        self.folder = folder
        pages = folder / "pages"
        pages.mkdir()
        (pages / "p2.json").write_text(json.dumps(PAGE_2))
        self.path = pages / "first.json"
        os.mkfifo(self.path)
        self.config = folder / "blocked.json"
        self.config.write_text(json.dumps({"collections": {"c": {
            "source": {"type": "file", "dir": "pages"},
            "paging": {"strategy": "cursor", "items": "/items", "next": "/next_cursor"}}}}))
        self.holder = None

    @property
    def args(self):
        return ["--config", str(self.config)]

    def wait_for_reader(self):
        """Returns once the server has opened the page to read it (the fetch is in flight);
        the page stays unwritten until `release`."""
        self.holder = os.open(self.path, os.O_WRONLY)

    def release(self):
        """Puts a regular first page in place of the FIFO; a read still waiting ends
        (an open still waiting finds a writer, then end of file)."""
        if self.holder is None:
            self.holder = os.open(self.path, os.O_RDWR | os.O_NONBLOCK)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(PAGE_1))
        os.rename(temporary, self.path)
        if self.holder is not None:
            os.close(self.holder)
            self.holder = None


@pytest.fixture
def blocked(workdir):
    page = BlockedPage(workdir)
    yield page
    if page.holder is not None:
        os.close(page.holder)

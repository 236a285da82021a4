"""The dashboard in a real headless Chromium (Debian's package) driven by Playwright: it shows the
instances and sessions, streams a turn in, approves a request by a click (the file lands on
disk), and interrupts a turn."""

from __future__ import annotations

import os
import time

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def browser():
    if not os.path.exists(CHROMIUM):
        reason = "needs Debian's Chromium: apt-get update && apt-get install -y chromium"
        if os.environ.get("PADDOCK_REQUIRE_PEERS") == "1":  # CI installs it: missing is a failure there
            pytest.fail(reason + " (PADDOCK_REQUIRE_PEERS=1)", pytrace=False)
        pytest.skip(reason)
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs Playwright: pip install -e '.[test]'")
    with sync_api.sync_playwright() as p:
        # the system browser: Playwright's own browser download cannot work offline
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _wait_for_file(path, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} was not written"
        time.sleep(0.05)
    return path.read_text()


def test_dashboard_streams_a_turn_approves_by_click_and_interrupts(make_server, browser):
    served = make_server("tcp")
    ws = served.workspace
    with served.remote() as rt:
        rt.start_session("web", instance="local-a", cwd=ws, runtime_mode="approval-required")
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{served.url}/#token={served.token}")
    assert "token=" not in page.url  # the page moved the token out of the address bar
    page.wait_for_selector("#instances li[data-instance='local-a'] .available")
    assert "turns.interrupt" in page.text_content("#instances li[data-instance='local-a'] details.caps")
    page.click("#sessions li[data-thread='web']")
    page.wait_for_selector("#sessions li.selected[data-thread='web']")

    full = "streaming into the page"
    page.fill("#prompt", f"@chunks 23\n@delay 0.08\n@reply {full}")
    page.click("#send")
    # part of the answer is on screen before all of it: the text streams in
    page.wait_for_function(
        "(full) => { const a = document.querySelector('#transcript .assistant');"
        " return a && a.textContent.length > 0 && a.textContent.length < full.length; }", arg=full)
    page.wait_for_function(
        "(full) => [...document.querySelectorAll('#transcript .assistant')].some(a => a.textContent === full)", arg=full)
    page.wait_for_selector("#transcript >> text=· turn completed")

    page.wait_for_selector("#send:not([disabled])")
    page.fill("#prompt", "@reply quick")  # its events may arrive before the POST returns
    page.click("#send")
    page.wait_for_function("() => [...document.querySelectorAll('#transcript .assistant')].some(a => a.textContent === 'quick')")
    page.wait_for_selector("#send:not([disabled])")
    page.fill("#prompt", f"@write {ws}/from-browser.txt clicked in chromium")
    page.click("#send")
    try:
        page.wait_for_selector("#requests button.accept", timeout=30_000)
    except Exception:  # say what the page showed instead (CI once waited 30 s for the button)
        with served.remote() as rt:
            turns = [(t.turn_id, t.state) for t in rt.read_thread("web").turns]
        raise AssertionError(f"no approval button: composer error {page.text_content('#composer-error')!r}, "
                             f"requests {page.text_content('#requests')!r}, turns {turns}") from None
    page.click("#requests button.accept")
    assert _wait_for_file(ws / "from-browser.txt") == "clicked in chromium"
    page.wait_for_selector("#transcript >> text=approval answered: accept by person (dashboard)")
    page.wait_for_function("() => document.querySelectorAll('#transcript .note').length > 0 && "
                           "[...document.querySelectorAll('#transcript div')].filter(d => d.textContent === '· turn completed').length === 3")
    page.wait_for_selector("#requests >> text=none")

    page.wait_for_selector("#send:not([disabled])")
    page.fill("#prompt", "@chunks 3000\n@delay 0.01")
    page.click("#send")
    page.wait_for_selector("#interrupt:not([disabled])")
    page.click("#interrupt")
    page.wait_for_selector("#transcript >> text=· turn interrupted")
    assert not errors, errors
    with served.remote() as rt:
        assert [t.state for t in rt.read_thread("web").turns] == ["completed", "completed", "completed", "interrupted"]


def test_dashboard_without_the_token_asks_for_it(make_server, browser):
    served = make_server("tcp")
    page = browser.new_page()
    page.goto(f"{served.url}/")
    page.wait_for_selector("#token-form:not([hidden])")
    assert page.is_hidden("#app")
    page.fill("#token-input", "not-the-token")
    page.click("#token-save")
    page.wait_for_selector("#token-form:not([hidden])")
    page.fill("#token-input", served.token)
    page.click("#token-save")
    page.wait_for_selector("#instances li[data-instance='local-b']")
    assert page.is_hidden("#token-form")


NINE_LOCAL_TOML = "".join(f'\n[instances.local-{i}]\ndriver = "local"\n' for i in range(1, 10))


def _within_the_viewport(locator, height: int, timeout: float = 10.0) -> bool:
    """Whether the element lies wholly inside the first screen once the page's layout settles
    (cards above it may still be arriving): polled until true or ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        box = locator.bounding_box()
        if box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height:
            return True
        if time.monotonic() > deadline:
            return False
        locator.page.wait_for_timeout(50)


def test_dashboard_for_many_accounts_puts_the_approval_with_its_command_first(make_server, browser):
    served = make_server("tcp", config=NINE_LOCAL_TOML)
    ws = served.workspace
    with served.remote() as rt:
        for i in range(1, 10):
            rt.start_session(f"t{i}", instance=f"local-{i}", cwd=ws, runtime_mode="approval-required")
        rt.send_turn("t5", "@run echo approved > approved.txt")  # waits at its approval
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{served.url}/#token={served.token}")
    page.wait_for_selector("#instances li[data-instance='local-9']")
    assert page.locator("#instances li").count() == 9
    card = page.locator("#requests li.request")
    card.wait_for()
    subject = card.locator(".subject")
    assert "$ echo approved > approved.txt" in subject.inner_text() and f"in {ws}" in subject.inner_text()
    accept = card.locator("button[data-decision='accept']")
    # Without scrolling: the approval, its command and its Accept button are on the first screen.
    assert page.evaluate("window.scrollY") == 0
    for part in (card, subject, accept):
        assert _within_the_viewport(part, 900), part.bounding_box()
    assert card.locator("a.thread").get_attribute("href") == "#thread=t5"
    # Capabilities are collapsed: nine instances take little room.
    assert not page.locator("#instances details.caps[open]").count()

    accept.click()
    assert _wait_for_file(ws / "approved.txt") == "approved\n"
    page.wait_for_selector("#requests >> text=none")

    # A thread view reachable by URL, and a filter by instance.
    page.goto(f"{served.url}/#thread=t5")
    page.wait_for_selector("#sessions li.selected[data-thread='t5']")
    page.wait_for_selector("#transcript >> text=approval answered: accept")
    assert "$ echo approved > approved.txt" in page.inner_text("#transcript")
    # An item.completed omits its status at the default ("completed"): shown as completed.
    page.wait_for_selector("#transcript >> text=■ command completed: echo approved > approved.txt")
    assert "undefined" not in page.inner_text("#transcript")
    page.select_option("#filter-instance", "local-3")
    page.wait_for_function("() => document.querySelectorAll('#sessions li.session').length === 1")
    assert page.get_attribute("#sessions li.session", "data-thread") == "t3"
    assert "approval-required" in page.inner_text("#sessions li.session")
    assert not errors, errors


def test_dashboard_session_rows_show_the_ledgers_tokens_and_cost(make_server, browser):
    served = make_server("tcp")
    with served.remote() as rt:
        rt.start_session("spent", instance="local-a", cwd=served.workspace)
        rt.send_turn("spent", "@cost 0.125\n@usage 1200 300\nhi")
        deadline = time.monotonic() + 20
        while rt.usage("spent").total.turns != 1 or rt.usage("spent").turns[0].state != "completed":
            assert time.monotonic() < deadline
            time.sleep(0.05)
    page = browser.new_page()
    page.goto(f"{served.url}/#token={served.token}")
    row = "#sessions li[data-thread='spent'] .facts"
    page.wait_for_selector(row)
    deadline = time.monotonic() + 20
    while "1500 tokens" not in (facts := page.text_content(row) or ""):
        assert time.monotonic() < deadline, facts
        time.sleep(0.1)
    assert "1500 tokens (1200 in / 300 out)" in facts and "$0.1250" in facts and "1 turn" in facts, facts


def test_dashboard_shows_each_turns_diff_of_a_worktree_thread(make_server, browser):
    from tests.workspaces.conftest import git

    served = make_server("tcp", config='[instances.wt]\ndriver = "local"\nworkspace = "worktree"\n')
    repo = served.workspace
    (repo / "README.md").write_text("hello\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    with served.remote() as rt:
        rt.start_session("wt", instance="wt", cwd=repo, runtime_mode="full-access")
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{served.url}/#token={served.token}")
    page.click("#sessions li[data-thread='wt']")
    page.wait_for_selector("#sessions li.selected[data-thread='wt']")
    page.fill("#prompt", "@write shown.txt a line the page shows")
    page.click("#send")
    summary = page.wait_for_selector("#transcript details.turn-diff summary")
    assert "files changed in this turn: shown.txt" in summary.text_content()
    summary.click()
    page.wait_for_selector("#transcript details.turn-diff .add >> text=+a line the page shows")
    assert not errors, errors


def test_dashboard_shows_queue_depth_and_a_queued_turn(make_server, browser):
    config = '[instances.gated]\ndriver = "local"\nmax_running_turns = 1\n'
    served = make_server("tcp", config=config)
    with served.remote() as rt:
        for t in ("busy", "waits"):
            rt.start_session(t, instance="gated", cwd=served.workspace)
        rt.send_turn("busy", "@chunks 6\n@delay 3\nlong")
        rt.send_turn("waits", "@reply later")
        page = browser.new_page()
        page.goto(f"{served.url}/#token={served.token}")
        page.wait_for_selector("#instances li[data-instance='gated'] .queue >> text=1 queued")
        page.wait_for_selector("#sessions li[data-thread='waits'] >> text=turn queued #1")
        rt.interrupt_turn("waits")
        deadline = time.monotonic() + 20
        while page.text_content("#instances li[data-instance='gated'] .queue"):  # the queue emptied
            assert time.monotonic() < deadline
            time.sleep(0.1)
        rt.interrupt_turn("busy")

"""Issue 22 items 6 and 11 in a real Chromium: the printed URL carries a one-time code, not
the token; a used code signs nobody in; a malformed ``%`` escape in the fragment leaves a
working page, not a blank one."""

from __future__ import annotations

from typing import Any

from tests.web.conftest import ConsoleLog, signed_in_url
from tests.web.harness import TOKEN, Live, require_playwright

try:
    from playwright.sync_api import expect
except ImportError:  # without Playwright the module skips (and fails under CI=true)
    require_playwright()
    raise


def test_a_sign_in_url_works_once(live: Live, page: Any, console: ConsoleLog) -> None:
    url = signed_in_url(live)
    page.goto(url)
    expect(page.locator("#catalog")).to_be_visible()
    assert page.url == f"{live.base}/#/"
    assert page.evaluate("sessionStorage.getItem('schedlog.token')") == TOKEN
    # the same URL again (from the history, say), in a fresh tab: refused
    console.allow_status(401)
    page.evaluate("sessionStorage.clear()")
    page.goto(url)
    expect(page.locator("#signin")).to_be_visible()
    expect(page.locator("#signin-error")).to_contain_text("used up or expired")
    assert page.evaluate("sessionStorage.getItem('schedlog.token')") is None
    assert "code=" not in page.url


def test_a_malformed_escape_in_the_fragment_leaves_a_working_page(live: Live, page: Any) -> None:
    page.goto(signed_in_url(live))
    expect(page.locator("#catalog")).to_be_visible()
    for bad in ("#/task/%E0%A4%A/x", "#/task/s-1/%"):
        page.evaluate("r => { location.hash = r; }", bad)
        expect(page.locator("#catalog")).to_be_visible()
    page.evaluate("sessionStorage.clear()")
    page.goto(f"{live.base}/#code=%E0%A4%A")  # a malformed code: the sign-in form, no error
    expect(page.locator("#signin-h")).to_be_visible()
    expect(page.locator("#signin-error")).to_contain_text("used up or expired")


def test_a_spoofing_title_is_isolated_and_clipped(live: Live, page: Any) -> None:
    title = "<b>&amp;</b> \u202eevil\u202c " + "a" + "\u0301" * 80
    task = live.create("s-\u202eoops", title=title, prompt="p", after_seconds=3600)
    page.goto(signed_in_url(live))
    link = page.locator(f'#rows tr[data-id="{task["id"]}"] a.user-text')
    expect(link).to_have_text(title)  # text, never markup
    assert link.get_attribute("dir") == "auto"
    style = "e => [getComputedStyle(e).unicodeBidi, getComputedStyle(e).overflow]"
    assert link.evaluate(style) == ["isolate", "hidden"]
    height = link.evaluate("e => e.getBoundingClientRect().height")
    assert height < 40  # 80 stacked marks stay inside one line box

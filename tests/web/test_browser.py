"""The web task page in a real Chromium: the nine scenarios of the page's issue, plus
keyboard use, the narrow layout and the rule descriptions. Each test saves a screenshot in
its temporary folder; with ``SCHEDLOG_DOCS_IMAGES=1`` the catalog and detail tests also write
``docs/img/catalog.png`` and ``docs/img/detail.png`` from this real data."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.host.helpers import T0
from tests.web.conftest import ConsoleLog, open_context, signed_in_url
from tests.web.harness import TOKEN, Live

try:
    from playwright.sync_api import expect
except ImportError:  # each test skips in its `browser` fixture (and fails under CI=true)
    expect = None  # type: ignore[assignment]

DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"


def shot(page: Any, tmp_path: Path, name: str, docs: str | None = None) -> Path:
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    if docs is not None and os.environ.get("SCHEDLOG_DOCS_IMAGES") == "1":
        # the docs copy: the top of the same page, at most 1440 x 1500
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        height = min(1500, page.evaluate("document.documentElement.scrollHeight"))
        clip = {"x": 0, "y": 0, "width": 1440, "height": height}
        page.screenshot(path=str(DOCS_IMG / docs), full_page=True, clip=clip)
    assert path.stat().st_size > 0
    return path


def open_page(page: Any, live: Live, route: str = "") -> None:
    page.goto(signed_in_url(live))
    expect(page.locator("#catalog")).to_be_visible()
    if route:
        page.evaluate("r => { location.hash = r; }", route)


def row(page: Any, task_id: str) -> Any:
    return page.locator(f'#rows tr[data-id="{task_id}"]')


def test_reminder_created_through_the_api_appears_in_the_catalog(
    live: Live, page: Any, tmp_path: Path
) -> None:
    standup = live.create(
        "s-team",
        title="Standup",
        prompt="Post the standup notes",
        weekly={"time": "09:00:00", "time_zone": "Asia/Shanghai", "weekdays": [1, 2, 3, 4, 5]},
    )
    live.create(
        "s-team",
        title="Check the build",
        prompt="Look at CI",
        cron={"expression": "*/15 9-17 * * 1-5", "time_zone": "Asia/Shanghai"},
    )
    live.create("s-home", title="Call home", prompt="Call home", after_seconds=3 * 3600)
    live.create("s-home", title="Stretch", prompt="Stand up and stretch", every_seconds=2700)
    page.goto(signed_in_url(live))
    # the one-time code left the address bar and was exchanged for the token (sessionStorage)
    expect(page.locator("#catalog")).to_be_visible()
    assert "code" not in page.url and TOKEN not in page.url
    assert page.evaluate("sessionStorage.getItem('schedlog.token')") == TOKEN
    tr = row(page, standup["id"])
    expect(tr).to_contain_text("Standup")
    expect(tr).to_contain_text("every weekday at 09:00 (Asia/Shanghai)")
    # next target in the task's zone, in the viewer's zone, and a relative hint
    expect(tr).to_contain_text("2026-05-04 09:00 Mon (Asia/Shanghai, +08:00)")
    expect(tr).to_contain_text("2026-05-03 21:00 Sun (America/New_York, -04:00) your time")
    expect(tr).to_contain_text("in 2 d")
    expect(tr).to_contain_text("s-team")
    expect(tr).to_contain_text("active")
    expect(tr).to_contain_text("never")
    expect(page.locator("#rows")).to_contain_text("every 15 min 9-17 Mon-Fri (Asia/Shanghai)")
    expect(page.locator("#rows")).to_contain_text("every 45 min")
    expect(page.locator("#rows")).to_contain_text("once, 3 h after it was set")
    shot(page, tmp_path, "catalog", docs="catalog.png")


def test_filter_and_paging_over_250_tasks(live: Live, page: Any, tmp_path: Path) -> None:
    # 250 tasks in two sessions; task i is due i+1 minutes after T0, so the catalog order
    # (by next target) is the creation order.
    live.create_many(
        [
            (
                "s-even" if i % 2 == 0 else "s-odd",
                {"title": f"Task {i:03d}", "prompt": f"p{i}", "at": _iso(T0 + (i + 1) * 60_000)},
            )
            for i in range(250)
        ]
    )
    open_page(page, live)
    rows = page.locator("#rows tr")
    expect(rows).to_have_count(50)
    expect(rows.first).to_contain_text("Task 000")
    expect(rows.last).to_contain_text("Task 049")
    for n in range(2, 6):
        page.get_by_role("button", name="Next page", exact=True).click()
        expect(page.locator("#page-no")).to_have_text(f"Page {n}")
        expect(rows.first).to_contain_text(f"Task {(n - 1) * 50:03d}")
    expect(rows).to_have_count(50)
    expect(rows.last).to_contain_text("Task 249")
    expect(page.get_by_role("button", name="Next page", exact=True)).to_be_disabled()
    page.get_by_role("button", name="Previous page", exact=True).click()
    expect(rows.first).to_contain_text("Task 150")
    # latest first
    page.locator("#sort-next").click()
    expect(page.locator("#th-next")).to_have_attribute("aria-sort", "descending")
    expect(page.locator("#page-no")).to_have_text("Page 1")
    expect(rows.first).to_contain_text("Task 249")
    page.locator("#sort-next").click()
    expect(rows.first).to_contain_text("Task 000")
    # title filter (case-insensitive): Task 120-129
    page.get_by_label("Title contains").fill("task 12")
    page.get_by_label("Title contains").press("Enter")
    expect(rows).to_have_count(10)
    expect(page.get_by_role("button", name="Next page", exact=True)).to_be_disabled()
    # plus the session filter: the even ones
    page.get_by_label("Session id").fill("s-even")
    page.get_by_role("button", name="Apply").click()
    expect(rows).to_have_count(5)
    for i in range(5):
        expect(rows.nth(i).locator('td[data-label="Session"]')).to_have_text("s-even")
    shot(page, tmp_path, "filtered")
    # status filter: nothing has ended
    page.get_by_label("Status").select_option("inactive")
    expect(page.locator("#empty")).to_contain_text("No reminders match these filters.")
    page.get_by_role("button", name="Clear").click()
    expect(rows).to_have_count(50)
    page.get_by_label("Per page").select_option("100")
    page.get_by_role("button", name="Apply").click()
    expect(rows).to_have_count(100)


def _iso(ms: int) -> str:
    from schedlog.rules.instants import format_instant

    return format_instant(ms)


def _ms(text: str) -> int:
    from tests.host.helpers import ms

    return ms(text)


def at_server_time(page: Any, live: Live) -> None:
    """Pin the browser clock (relative hints) to the server's virtual now."""
    page.clock.set_fixed_time(datetime.fromtimestamp(live.clock.now_ms() / 1000, UTC))


def test_detail_shows_the_history_after_a_delivery(live: Live, page: Any, tmp_path: Path) -> None:
    from schedlog.host.config import Retention

    standup = live.create(
        "s-team",
        title="Standup",
        prompt="Post the standup notes",
        daily={"time": "09:30:00", "time_zone": "Europe/Berlin"},
    )
    day = 86_400_000
    # Virtual time runs to 2026-09-28 (one delivery: the latest missed occurrence), then one
    # day at a time to 2026-10-21: 24 deliveries in all. With retention at 22 records the
    # history is pruned; pages of 20 need "older" once. The next five targets then cross the
    # end of summer time in Berlin (2026-10-25).
    live.service.retention = Retention(days=30, records=22)
    start = _ms("2026-09-28T08:00:00.000Z")
    live.jump(start)
    ping = live.create("s-team", title="Ping", prompt="Ping the on-call", every_seconds=86_400)
    for d in range(1, 24):
        live.run_until(start + d * day)
    at_server_time(page, live)
    open_page(page, live, f"#/task/s-team/{standup['id']}")
    expect(page.locator("#detail-h")).to_have_text("Standup")
    record = page.locator("#record")
    expect(record).to_contain_text("every day at 09:30 (Europe/Berlin)")
    expect(record).to_contain_text("Post the standup notes")
    expect(record).to_contain_text("2026-10-22 09:30 Thu (Europe/Berlin, +02:00)")
    expect(record).to_contain_text("in 23 h")
    # the next five targets, from /explain, with the DST note on the day the offset changes
    upcoming = page.locator("#upcoming li")
    expect(upcoming).to_have_count(5)
    expect(upcoming.nth(3)).to_contain_text("2026-10-25 09:30 Sun (Europe/Berlin, +01:00)")
    expect(upcoming.nth(3)).to_contain_text("DST change on this local day")
    expect(page.locator("#upcoming .dst")).to_have_count(1)
    # the history, newest first, 20 a page, then older
    hist = page.locator("#history-rows tr")
    expect(hist).to_have_count(20)
    entry = live.entry("s-team", standup["id"])
    expect(hist.first).to_contain_text(entry["lastDelivery"]["messageId"])
    expect(hist.first).to_contain_text("2026-10-21 09:30 Wed (Europe/Berlin, +02:00)")
    expect(hist.first).to_contain_text("Post the standup notes")
    expect(page.locator("#older")).to_be_visible()
    page.locator("#older").click()
    expect(hist).to_have_count(22)
    expect(hist.last).to_contain_text("2026-09-30 09:30 Wed")
    expect(page.locator("#older")).to_be_hidden()
    expect(page.locator("#history-flags")).to_contain_text(
        "Earlier deliveries were pruned by retention (kept: 30 days, at most 22 records)."
    )
    shot(page, tmp_path, "detail", docs="detail.png")
    # another task's page: its own history, no pruning
    page.evaluate("r => { location.hash = r; }", f"#/task/s-team/{ping['id']}")
    expect(page.locator("#detail-h")).to_have_text("Ping")
    expect(page.locator("#history-rows tr").first).to_contain_text("Ping the on-call")
    expect(page.locator("#history-flags")).to_have_text("")


def test_edit_title_and_rule_saves_and_the_catalog_shows_the_new_target(
    live: Live, page: Any, tmp_path: Path
) -> None:
    task = live.create(
        "s-1", title="Standup", daily={"time": "09:30:00", "time_zone": "Europe/Berlin"}
    )
    open_page(page, live, f"#/task/s-1/{task['id']}")
    page.get_by_role("button", name="Edit").click()
    expect(page.get_by_label("Title", exact=True)).to_have_value("Standup")
    page.get_by_label("Title", exact=True).fill("Weekly review")
    page.get_by_role("radio", name="cron").check()
    page.get_by_label("Cron expression").fill("0 16 * * 5")
    page.get_by_label("Time zone").fill("Asia/Tokyo")
    # the live preview of the next targets, from the server
    preview = page.locator("#cron-preview")
    expect(preview).to_contain_text("every Fri at 16:00 (Asia/Tokyo)")
    expect(preview.locator("li")).to_have_count(5)
    expect(preview.locator("li").first).to_contain_text("2026-05-01 16:00 Fri (Asia/Tokyo, +09:00)")
    shot(page, tmp_path, "edit")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#detail-message")).to_have_text("Saved.")
    expect(page.locator("#detail-h")).to_have_text("Weekly review")
    entry = live.entry("s-1", task["id"])
    assert entry["kind"] == "cron" and entry["title"] == "Weekly review"
    assert entry["scheduledAt"] == "2026-05-01T07:00:00.000Z"
    page.locator("#back").click()
    tr = row(page, task["id"])
    expect(tr).to_contain_text("Weekly review")
    expect(tr).to_contain_text("every Fri at 16:00 (Asia/Tokyo)")
    expect(tr).to_contain_text("2026-05-01 16:00 Fri (Asia/Tokyo, +09:00)")
    expect(tr).to_contain_text("2026-05-01 03:00 Fri (America/New_York, -04:00) your time")
    shot(page, tmp_path, "catalog-after-edit")
    # a save that changes nothing says so
    row(page, task["id"]).get_by_role("link").click()
    page.get_by_role("button", name="Edit").click()
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#detail-message")).to_have_text(
        "Nothing changed: the edit matches the saved reminder."
    )


def test_concurrent_edit_gives_the_conflict_view_and_reapply_succeeds(
    live: Live, page: Any, console: ConsoleLog, tmp_path: Path
) -> None:
    console.allow_status(409)
    task = live.create("s-1", title="Standup", prompt="Post the notes", every_seconds=3600)
    open_page(page, live, f"#/task/s-1/{task['id']}")
    page.get_by_role("button", name="Edit").click()
    page.get_by_label("Prompt", exact=True).fill("Post the notes in #team")
    # meanwhile someone else renames it through the API
    expected = {k: v for k, v in live.entry("s-1", task["id"]).items() if k in task}
    r = live.client.put(
        f"/v1/sessions/s-1/tasks/{task['id']}", json={"expected": expected, "title": "Daily sync"}
    )
    assert r.status_code == 200, r.text
    # the live update does not touch the form: a notice instead
    expect(page.locator("#server-notice")).to_contain_text("changed on the server")
    expect(page.get_by_label("Prompt", exact=True)).to_have_value("Post the notes in #team")
    expect(page.get_by_label("Title", exact=True)).to_have_value("Standup")
    page.get_by_role("button", name="Save").click()
    conflict = page.locator("#conflict")
    expect(conflict).to_be_visible()
    expect(conflict).to_contain_text("Daily sync")
    expect(conflict.locator("tr.differs")).to_have_count(2)  # title (theirs) and prompt (mine)
    shot(page, tmp_path, "conflict")
    page.get_by_role("button", name="Re-apply my edit on the current record").click()
    expect(page.locator("#detail-message")).to_have_text("Saved.")
    entry = live.entry("s-1", task["id"])
    assert entry["title"] == "Daily sync"
    assert entry["prompt"] == "Post the notes in #team"
    expect(page.locator("#detail-h")).to_have_text("Daily sync")


def test_the_page_shows_the_servers_rule_descriptions(
    live: Live, page: Any, console: ConsoleLog
) -> None:
    # Shapes the old JavaScript describer printed raw ("cron 0 9 1 * 1"): the server's text
    # (schedlog/rules/describe.py) in the catalog, the detail view, the live preview and the
    # conflict view, where an unsaved rule is described by POST /v1/rules/preview.
    console.allow_status(409)
    either = "on day 1 of the month or every Mon at 09:00 (UTC)"
    fridays = "every Fri falling on days 1, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31 of the month"
    task = live.create("s-1", title="Either", cron={"expression": "0 9 1 * 1", "time_zone": "UTC"})
    open_page(page, live)
    expect(row(page, task["id"])).to_contain_text(either)
    row(page, task["id"]).get_by_role("link").click()
    expect(page.locator("#record")).to_contain_text(either)
    page.get_by_role("button", name="Edit").click()
    page.get_by_role("radio", name="cron").check()
    page.get_by_label("Cron expression").fill("30 7 */3 * 5")
    page.get_by_label("Time zone").fill("UTC")
    expect(page.locator("#cron-preview")).to_contain_text(f"Next targets of {fridays} at 07:30")
    # meanwhile someone else renames it through the API
    expected = {k: v for k, v in live.entry("s-1", task["id"]).items() if k in task}
    r = live.client.put(
        f"/v1/sessions/s-1/tasks/{task['id']}", json={"expected": expected, "title": "Renamed"}
    )
    assert r.status_code == 200, r.text
    page.get_by_role("button", name="Save").click()
    conflict = page.locator("#conflict")
    expect(conflict).to_be_visible()
    rule = conflict.locator("tr.differs:has(th:text-is('Rule'))")
    expect(rule).to_contain_text(either)
    expect(rule).to_contain_text(f"{fridays} at 07:30 (UTC)")
    page.get_by_role("button", name="Re-apply my edit on the current record").click()
    expect(page.locator("#detail-message")).to_have_text("Saved.")
    expect(page.locator("#record")).to_contain_text(f"{fridays} at 07:30 (UTC)")
    assert console.unexpected() == [], console.unexpected()


def test_invalid_cron_shows_invalid_rule_beside_the_field(
    live: Live, page: Any, console: ConsoleLog, tmp_path: Path
) -> None:
    console.allow_status(400, 422)
    task = live.create("s-1", title="Standup", daily={"time": "09:30:00", "time_zone": "UTC"})
    open_page(page, live, f"#/task/s-1/{task['id']}")
    page.get_by_role("button", name="Edit").click()
    page.get_by_role("radio", name="cron").check()
    page.get_by_label("Cron expression").fill("61 * * * *")
    expect(page.locator("#cron-preview")).to_contain_text("invalid_rule")
    page.get_by_role("button", name="Save").click()
    err = page.locator("#err-cron")
    expect(err).to_contain_text("invalid_rule")
    expect(page.get_by_label("Cron expression")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Cron expression")).to_be_focused()
    shot(page, tmp_path, "invalid-cron")
    # an unknown zone is placed beside the zone field, with its own code
    page.get_by_label("Cron expression").fill("0 9 * * *")
    page.get_by_label("Time zone").fill("Mars/Olympus")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#err-zone")).to_contain_text("invalid_time_zone")
    expect(err).to_be_hidden()
    # a blank title is invalid_prompt beside the title
    page.get_by_label("Time zone").fill("UTC")
    page.get_by_label("Title", exact=True).fill("   ")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#err-title")).to_contain_text("invalid_prompt")
    assert live.entry("s-1", task["id"])["kind"] == "daily"  # nothing was saved


def test_delete_removes_the_row(live: Live, page: Any, tmp_path: Path) -> None:
    keep = live.create("s-1", title="Keep me")
    gone = live.create("s-1", title="Remove me")
    open_page(page, live)
    expect(row(page, gone["id"])).to_be_visible()
    row(page, gone["id"]).get_by_role("link").click()
    page.get_by_role("button", name="Delete").click()
    dialog = page.locator("#confirm")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("“Remove me”")
    expect(dialog).to_contain_text(gone["id"])
    shot(page, tmp_path, "confirm")
    # cancelling keeps it
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    page.get_by_role("button", name="Delete").click()
    dialog.get_by_role("button", name="Delete").click()
    expect(page.locator("#catalog")).to_be_visible()
    expect(row(page, gone["id"])).to_have_count(0)
    expect(row(page, keep["id"])).to_be_visible()
    expect(page.locator("#catalog-status")).to_contain_text("Deleted “\u2068Remove me\u2069”")
    r = live.client.get(f"/v1/sessions/s-1/tasks/{gone['id']}")
    assert r.status_code == 404
    shot(page, tmp_path, "deleted")


def test_live_update_shows_a_task_created_elsewhere(live: Live, page: Any, tmp_path: Path) -> None:
    open_page(page, live)
    expect(page.locator("#empty")).to_contain_text("No reminders yet")
    expect(page.locator("#live")).to_have_text("Live updates on")
    task = live.create("s-agent", title="Created by an agent", after_seconds=900)
    expect(row(page, task["id"])).to_contain_text("Created by an agent")
    expect(page.locator("#empty")).to_be_hidden()
    # a delivery shows up too: the row turns "ended" with a last delivery
    live.run_until(T0 + 900_000)
    expect(row(page, task["id"]).locator('td[data-label="Status"]')).to_have_text("ended")
    expect(row(page, task["id"]).locator('td[data-label="Last delivery"]')).to_contain_text(
        "2026-05-01 06:15 Fri UTC"
    )
    shot(page, tmp_path, "live")


def test_unauthenticated_visit_shows_the_sign_in_screen(
    live: Live, page: Any, console: ConsoleLog, tmp_path: Path
) -> None:
    console.allow_status(401)
    page.goto(live.base + "/")
    expect(page.locator("#signin")).to_be_visible()
    expect(page.locator("#catalog")).to_be_hidden()
    shot(page, tmp_path, "signin")
    page.get_by_label("Access token").fill("not-the-token-at-all")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#signin-error")).to_have_text("That token was refused.")
    assert page.evaluate("sessionStorage.getItem('schedlog.token')") is None
    page.get_by_label("Access token").fill(TOKEN)
    page.get_by_label("Access token").press("Enter")
    expect(page.locator("#catalog")).to_be_visible()
    # the empty state says how to create one
    expect(page.locator("#empty")).to_contain_text("No reminders yet")
    expect(page.locator("#empty")).to_contain_text("schedule_create")
    shot(page, tmp_path, "empty")
    page.get_by_role("button", name="Sign out").click()
    expect(page.locator("#signin")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('schedlog.token')") is None


def test_an_edit_of_a_task_that_ended_meanwhile_says_so(
    live: Live, page: Any, console: ConsoleLog, tmp_path: Path
) -> None:
    console.allow_status(410)
    task = live.create("s-1", title="Soon", after_seconds=60)
    open_page(page, live, f"#/task/s-1/{task['id']}")
    page.get_by_role("button", name="Edit").click()
    page.get_by_label("Title", exact=True).fill("Later")
    live.run_until(T0 + 60_000)  # delivered while the form is open: the task ends
    expect(page.locator("#server-notice")).to_contain_text("changed on the server")
    expect(page.get_by_label("Title", exact=True)).to_have_value("Later")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#detail-message")).to_have_text(
        "Not saved: this reminder has already ended, so it can no longer be edited."
    )
    expect(page.locator("#record")).to_contain_text("ended")
    expect(page.get_by_role("button", name="Edit")).to_be_disabled()
    shot(page, tmp_path, "ended")


def test_keyboard_only_use_and_labels(live: Live, page: Any, tmp_path: Path) -> None:
    task = live.create("s-1", title="Standup", daily={"time": "09:30:00", "time_zone": "UTC"})
    open_page(page, live)
    expect(row(page, task["id"])).to_be_visible()
    # every control has a label (an accessible name)
    unlabeled = page.evaluate(
        """() => [...document.querySelectorAll('input, select, textarea, button')]
            .filter(c => !(c.labels && c.labels.length) && !c.getAttribute('aria-label')
                         && !c.textContent.trim())
            .map(c => c.id || c.outerHTML)"""
    )
    assert unlabeled == []

    def tab_to(selector: str, limit: int = 40) -> None:
        for _ in range(limit):
            page.keyboard.press("Tab")
            if page.evaluate("s => document.activeElement.matches(s)", selector):
                return
        raise AssertionError(f"Tab never reached {selector}")

    tab_to(f'#rows tr[data-id="{task["id"]}"] a')
    page.keyboard.press("Enter")
    expect(page.locator("#detail-h")).to_have_text("Standup")
    tab_to("#edit")
    page.keyboard.press("Enter")
    expect(page.get_by_label("Title", exact=True)).to_be_focused()
    page.keyboard.type(" notes")
    tab_to('input[name="kind"][value="keep"]')
    page.keyboard.press("ArrowDown")  # radio group: the next kind, "once at"
    expect(page.locator('.kind-fields[data-kind="at"]')).to_be_visible()
    page.keyboard.press("ArrowUp")
    tab_to("#save")
    page.keyboard.press("Enter")
    expect(page.locator("#detail-message")).to_have_text("Saved.")
    expect(page.locator("#detail-h")).to_have_text("Standup notes")
    # the delete dialog opens on Cancel, and Escape closes it
    tab_to("#delete")
    page.keyboard.press("Enter")
    expect(page.locator("#confirm")).to_be_visible()
    expect(page.locator("#confirm-cancel")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator("#confirm")).to_be_hidden()
    assert live.entry("s-1", task["id"])["title"] == "Standup notes"
    shot(page, tmp_path, "keyboard")


def test_readable_at_375_px(live: Live, browser: Any, console: ConsoleLog, tmp_path: Path) -> None:
    task = live.create(
        "s-team",
        title="Standup",
        prompt="Post the standup notes",
        weekly={"time": "09:00:00", "time_zone": "Asia/Shanghai", "weekdays": [1, 2, 3, 4, 5]},
    )
    live.create("s-home", title="Stretch", prompt="Stand up and stretch", every_seconds=2700)
    context = open_context(browser, console, width=375, height=800)
    try:
        page = context.new_page()
        open_page(page, live)
        expect(row(page, task["id"])).to_contain_text("every weekday at 09:00 (Asia/Shanghai)")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, f"the catalog scrolls sideways at 375 px ({width} px)"
        shot(page, tmp_path, "catalog-375")
        row(page, task["id"]).get_by_role("link").click()
        expect(page.locator("#upcoming li")).to_have_count(5)
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        page.get_by_role("button", name="Edit").click()
        page.get_by_role("radio", name="weekly").check()
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        shot(page, tmp_path, "edit-375")
    finally:
        context.close()
    assert console.unexpected() == [], console.unexpected()


def test_times_in_the_browser(live: Live, page: Any) -> None:
    # Rule descriptions come from the server (tests/rules/test_describe.py); the page only
    # formats instants.
    open_page(page, live)
    got = page.evaluate(
        """async () => {
        const m = await import('/static/times.js');
        return {
          utc: m.formatUtc('2026-05-01T18:00:00.000Z'),
          before: m.formatZoned('2026-11-01T05:30:00.000Z', 'America/New_York'),
          after: m.formatZoned('2026-11-01T06:30:00.000Z', 'America/New_York'),
          india: m.formatZoned('2026-05-01T06:00:00.000Z', 'Asia/Kolkata'),
          rel: [m.relative(Date.parse('2026-05-01T09:00:00Z'), Date.parse('2026-05-01T06:00:00Z')),
                m.relative(Date.parse('2026-04-29T06:00:00Z'), Date.parse('2026-05-01T06:00:00Z')),
                m.relative(Date.parse('2026-05-01T06:00:30Z'), Date.parse('2026-05-01T06:00:00Z')),
                m.relative(Date.parse('2026-05-01T06:25:00Z'), Date.parse('2026-05-01T06:00:00Z'))],
        };
    }"""
    )
    assert got == {
        "utc": "2026-05-01 18:00 Fri UTC",
        "before": "2026-11-01 01:30 Sun (America/New_York, -04:00)",
        "after": "2026-11-01 01:30 Sun (America/New_York, -05:00)",
        "india": "2026-05-01 11:30 Fri (Asia/Kolkata, +05:30)",
        "rel": ["in 3 h", "2 d ago", "in under a minute", "in 25 min"],
    }


MARKUP_TITLE = '<b id="injected">bold</b> & &amp; "q" <\'>'
MARKUP_PROMPT = '<img id="injected-img" src=x onerror="window.pwned=1"> &lt;b&gt; &#60;'


def test_markup_and_entities_in_user_text_show_as_text(live: Live, page: Any) -> None:
    """A title and prompt with tags and entities are shown literally, in the catalog and the
    detail view: a ``textContent`` to ``innerHTML`` slip would render them (issue 22)."""
    task = live.create("s-1", title=MARKUP_TITLE, prompt=MARKUP_PROMPT, after_seconds=600)
    odd = live.client.post(
        "/v1/sessions/s-1/tools/schedule_create",
        content=b'{"title":"lone \\ud800 surrogate","prompt":"p\\udc00","after_seconds":900}',
        headers={"content-type": "application/json"},
    ).json()
    open_page(page, live)
    tr = row(page, task["id"])
    expect(tr).to_contain_text(MARKUP_TITLE)
    expect(row(page, odd["id"])).to_contain_text("surrogate")  # a row, not internal_error
    assert page.locator("#injected, #injected-img").count() == 0
    tr.get_by_role("link").click()
    expect(page.locator("#detail-h")).to_have_text(MARKUP_TITLE)
    expect(page.locator("#detail")).to_contain_text(MARKUP_PROMPT)
    assert page.locator("#injected, #injected-img").count() == 0
    assert page.evaluate("window.pwned === undefined")


#: A title whose U+202E (right-to-left override) would reverse the rest of the question.
OVERRIDE_TITLE = "Payroll \u202eabc <b>&amp;"

#: Where each piece of the confirm question is drawn: the rectangle of the title's <bdi>, of
#: the text right after it, and the nodes holding user text.
_CONFIRM_LAYOUT = """() => {
  const p = document.getElementById("confirm-text");
  const title = p.childNodes[1];
  const after = document.createRange();
  after.selectNodeContents(p.childNodes[2]);
  const t = title.getBoundingClientRect(), a = after.getClientRects()[0];
  const user = [...p.children].map(e => ({
    tag: e.tagName, dir: e.getAttribute("dir"), text: e.textContent,
    bidi: getComputedStyle(e).unicodeBidi }));
  return { titleRight: t.right, titleTop: t.top, titleBottom: t.bottom, afterLeft: a.left,
           afterTop: a.top, afterBottom: a.bottom, user,
           plain: [...p.childNodes].filter(n => n.nodeType === 3).map(n => n.data).join("") };
}"""


def test_the_delete_question_isolates_a_bidi_override(
    live: Live, page: Any, tmp_path: Path
) -> None:
    """A U+202E in a title stays inside the title in the delete confirmation: the text after
    it is still drawn after it, left to right (issue 22, item 11: bidi spoofing)."""
    task = live.create("s-1", title=OVERRIDE_TITLE, after_seconds=600)
    open_page(page, live)
    row(page, task["id"]).get_by_role("link").click()
    page.get_by_role("button", name="Delete").click()
    expect(page.locator("#confirm")).to_be_visible()
    layout = page.evaluate(_CONFIRM_LAYOUT)
    shot(page, tmp_path, "confirm-bidi")
    assert layout["user"] == [
        {"tag": "BDI", "dir": "auto", "text": OVERRIDE_TITLE, "bidi": "isolate"},
        {"tag": "BDI", "dir": "auto", "text": task["id"], "bidi": "isolate"},
        {"tag": "BDI", "dir": "auto", "text": "s-1", "bidi": "isolate"},
    ]
    assert "\u202e" not in layout["plain"]
    # Isolated, the closing quote sits right of the whole title on its line; leaked, the
    # override reverses it into the middle of the title's box.
    same_line = (
        layout["afterTop"] < layout["titleBottom"] and layout["afterBottom"] > layout["titleTop"]
    )
    assert same_line, layout
    assert layout["afterLeft"] >= layout["titleRight"] - 1, layout
    assert page.locator("#confirm b").count() == 0  # markup shown as text
    page.locator("#confirm").get_by_role("button", name="Delete").click()
    expect(page.locator("#catalog-status")).to_contain_text(
        f"Deleted “\u2068{OVERRIDE_TITLE}\u2069”"
    )

"""Pause and Resume on the web task page in a real Chromium (docs/protocol.md#pause): the
detail's buttons, the catalog's ``paused`` mark and status filter, and a pause made elsewhere
arriving live."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.host.helpers import T0
from tests.web.harness import Live
from tests.web.test_browser import expect, open_page, row, shot


def test_pause_and_resume_from_the_detail(live: Live, page: Any, tmp_path: Path) -> None:
    task = live.create("s-1", title="<b>Standup</b> & co", every_seconds=3600)
    other = live.create("s-1", title="Keep going", every_seconds=3600)
    open_page(page, live)
    row(page, task["id"]).get_by_role("link").click()
    pause = page.get_by_role("button", name="Pause")
    resume = page.get_by_role("button", name="Resume")
    expect(pause).to_be_visible()
    expect(resume).to_be_hidden()
    pause.click()
    expect(page.locator("#detail-message")).to_contain_text("Paused")
    expect(resume).to_be_visible()
    expect(pause).to_be_hidden()
    expect(resume).to_be_focused()
    expect(page.locator("#record")).to_contain_text("paused")
    expect(page.locator("#upcoming")).to_contain_text("None while paused")
    assert live.entry("s-1", task["id"])["status"] == "paused"
    shot(page, tmp_path, "paused-detail")
    # the catalog marks it, and the status filter finds it
    page.locator("#back").click()
    status = row(page, task["id"]).locator('td[data-label="Status"]')
    expect(status).to_have_text("paused")
    expect(row(page, task["id"])).to_have_class("paused")
    expect(row(page, other["id"]).locator('td[data-label="Status"]')).to_have_text("active")
    page.locator("#f-status").select_option("paused")
    page.get_by_role("button", name="Apply").click()
    expect(row(page, other["id"])).to_have_count(0)
    expect(row(page, task["id"])).to_be_visible()
    shot(page, tmp_path, "paused-catalog")
    # three hours later nothing was delivered; resuming keeps the cadence
    live.run_until(T0 + 3 * 3600_000 + 60_000)
    row(page, task["id"]).get_by_role("link").click()
    expect(resume).to_be_visible()
    resume.click()
    expect(page.locator("#detail-message")).to_contain_text("Resumed")
    expect(pause).to_be_visible()
    entry = live.entry("s-1", task["id"])
    assert entry["status"] == "active" and "lastDelivery" not in entry
    assert entry["scheduledAt"] == "2026-05-01T10:00:00.000Z"


def test_a_pause_made_elsewhere_arrives_live(live: Live, page: Any) -> None:
    task = live.create("s-1", title="Paused by an agent", every_seconds=3600)
    open_page(page, live)
    expect(page.locator("#live")).to_have_text("Live updates on")
    status = row(page, task["id"]).locator('td[data-label="Status"]')
    expect(status).to_have_text("active")
    response = live.client.post(f"/v1/sessions/s-1/tasks/{task['id']}/pause")
    assert response.status_code == 200
    expect(status).to_have_text("paused")
    row(page, task["id"]).get_by_role("link").click()
    expect(page.get_by_role("button", name="Resume")).to_be_visible()
    live.client.post(f"/v1/sessions/s-1/tasks/{task['id']}/resume")
    expect(page.get_by_role("button", name="Pause")).to_be_visible()

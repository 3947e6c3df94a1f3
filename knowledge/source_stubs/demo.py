"""The demo's hosted sources: a small Confluence site, Drive folder, GitHub repository and Slack
workspace, each with permissions and groups naming the demo people, and the connector settings that
read them from a local stub server."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from knowledge.source_stubs import confluence, drive, github, slack
from knowledge.source_stubs.git_http import GitRepository
from knowledge.source_stubs.server import StubServer

ERIN, ELI, HANA = "erin@example.com", "eli@example.com", "hana@example.com"


@dataclass(frozen=True)
class DemoSource:
    """One hosted connector of the demo: its kind, the stub that plays its source, and its settings."""

    name: str
    kind: str
    stub: Callable[[], StubServer]
    config: Callable[[str], dict[str, Any]]  # the settings, given the stub's URL
    credential: Callable[[str], str]


def confluence_world() -> confluence.ConfluenceWorld:
    return confluence.ConfluenceWorld(
        spaces={"S1": "ENG", "S2": "PEOPLE"},
        readers={"S1": [("group", "geng")], "S2": [("group", "gpeople")]},
        groups={"geng": ("engineering", ["a-erin", "a-eli"]), "gpeople": ("people-team", ["a-hana"])},
        accounts={"a-erin": ERIN, "a-eli": ELI, "a-hana": HANA},
        pages={
            "100": confluence.Page(
                "Incident review process",
                "<h1>Incident reviews</h1><p>Every production incident gets a blameless review within"
                " five working days; the on-call engineer writes the first draft.</p>",
                "S1",
            ),
            "101": confluence.Page(
                "Database failover drill",
                "<p>The platform team runs a database failover drill every quarter, restricted to Erin"
                " while the runbook is rewritten.</p>",
                "S1",
                parent="100",
                restricted_users=["a-erin"],
            ),
            "200": confluence.Page(
                "Performance review calendar",
                "<p>Performance reviews open in March; salary band changes take effect in April.</p>",
                "S2",
            ),
        },
    )


def drive_world() -> drive.DriveWorld:
    return drive.DriveWorld(
        files={
            "demo-folder": drive.DriveFile("Team handbook", drive.FOLDER, parents=["root"]),
            "expenses": drive.DriveFile(
                "Expense policy",
                drive.DOC,
                b"<h1>Expenses</h1><p>Submit travel expenses within 30 days with the receipts attached.</p>",
                parents=["demo-folder"],
                permissions=[drive.user(HANA, "owner"), drive.domain("example.com")],
            ),
            "hiring": drive.DriveFile(
                "Hiring plan 2027",
                drive.DOC,
                b"<p>The hiring plan adds two platform engineers and one recruiter in 2027.</p>",
                parents=["demo-folder"],
                permissions=[drive.user(HANA, "owner"), drive.group("leads@example.com")],
            ),
        },
        groups={"leads@example.com": [HANA, ERIN]},
        users=[ERIN, ELI, HANA],
    )


def github_world() -> github.GithubWorld:
    wiki = GitRepository("acme/platform.wiki.git")
    wiki.publish({"Deploy-Rota.md": "# Deploy rota\nThe deploy rota changes every Monday; Eli is on it."})
    return github.GithubWorld(
        wiki=wiki,
        repo="platform",
        files={
            "README.md": "# Platform\nDeploys go out from the main branch through the release pipeline.",
            "docs/deploys.md": "# Deploys\nA deploy freeze starts on the last Friday of each quarter.",
        },
        issues={
            1: github.Issue(
                "Deploy freeze dates",
                "When does the deploy freeze start this quarter?",
                comments=[("eli", "The last Friday, as docs/deploys.md says.")],
            ),
        },
        collaborators=["erin"],
        teams={"platform": ["eli"]},
        emails={"erin": ERIN, "eli": ELI, "hana": HANA},
    )


def slack_world() -> slack.SlackWorld:
    source = slack.SlackWorld()
    for user_id, name, email in (("U1", "erin", ERIN), ("U2", "eli", ELI), ("U3", "hana", HANA)):
        source.user(user_id, name, email)
    source.user("UB", "kb-bot", None, is_bot=True)
    source.channels = {
        "C1": slack.Channel("incidents", ["U1", "U2", "UB"]),
        "C2": slack.Channel("people-ops", ["U3", "UB"], is_private=True),
    }
    now = time.time()
    parent = source.post("C1", "U1", "The payments database failed over at 03:10; I'm on it.", now - 3600)
    source.reply("C1", parent, "U2", "Replica promoted, writes are back. Review on Thursday.", now - 3000)
    source.post("C2", "U3", "Reminder: salary band letters go out on April 1st.", now - 1800)
    return source


SOURCES = (
    DemoSource(
        "team-wiki",
        "confluence",
        lambda: confluence_world().stub(),
        lambda url: {"site_url": url},
        lambda url: confluence.CREDENTIAL,
    ),
    DemoSource(
        "team-drive",
        "google_drive",
        lambda: drive_world().stub(),
        lambda url: {
            "domain": "example.com",
            "subject": drive.SUBJECT,
            "folders": ["demo-folder"],
            "api_url": url,
        },
        lambda url: drive.service_account_key(f"{url}/token"),
    ),
    DemoSource(
        "platform-repo",
        "github",
        lambda: github_world().stub(),
        lambda url: {"repository": "acme/platform", "api_url": url, "web_url": url},
        lambda url: github.TOKEN,
    ),
    DemoSource(
        "team-slack",
        "slack",
        lambda: slack_world().stub(),
        lambda url: {"api_url": url},
        lambda url: slack.TOKEN,
    ),
)

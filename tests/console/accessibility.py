"""axe-core in the console's browser tests: the vendored release, injected into a page that
never loads it itself, run on what the page shows, its findings kept for one assertion."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Page

from tests.console.helpers import FADED

# Served with the console's other vendored files (server/console/static/vendor/), which is
# what lets the page's Content-Security-Policy (script-src 'self') run it; the console itself
# never loads it.
AXE_PATH = "/console/vendor/axe-core/axe.min.js"
# What fails a test; moderate and minor findings are reported beside them.
FAILING_IMPACTS = ("serious", "critical")
LOADED_BY_THE_PAGE = """() => typeof window.axe !== "undefined"
  || performance.getEntriesByType("resource").some((entry) => entry.name.includes("axe-core"))"""
# Every rule axe runs by default (WCAG 2.0, 2.1 and 2.2 A and AA, and best practices), on
# the whole document; every finding, with the node it is about and what would fix it.
RUN_AXE = """async () => {
  const results = await axe.run(document, { resultTypes: ["violations"] });
  return results.violations.flatMap((rule) => rule.nodes.map((node) => ({
    rule: rule.id,
    impact: node.impact || rule.impact,
    help: rule.help,
    target: node.target.join(" "),
    html: node.html.slice(0, 160),
    fix: node.failureSummary,
  })));
}"""


@dataclass
class Finding:
    view: str
    rule: str
    impact: str
    help: str
    target: str
    html: str
    fix: str

    def __str__(self) -> str:
        fix = self.fix.replace("\n", "\n      ")
        return (
            f"[{self.view}] {self.rule} ({self.impact}): {self.help}\n"
            f"    at {self.target}: {self.html}\n      {fix}"
        )


@dataclass
class Audit:
    """Runs axe on a page as it is now (await audit(page, "what it shows")); assert_clean()
    at the end fails on every serious or critical finding of every view, listed."""

    origin: str
    views: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    async def __call__(self, page: Page, view: str) -> None:
        if not await page.evaluate("() => typeof window.axe === 'object'"):
            assert not await page.evaluate(LOADED_BY_THE_PAGE), "the console loaded axe-core"
            await page.add_script_tag(url=self.origin + AXE_PATH)
        # Colours are read as they settle: a highlight fading out is not what stays.
        await page.wait_for_function(FADED)
        found: list[dict[str, Any]] = await page.evaluate(RUN_AXE)
        self.views.append(view)
        self.findings.extend(Finding(view=view, **item) for item in found)

    @property
    def failing(self) -> list[Finding]:
        return [f for f in self.findings if f.impact in FAILING_IMPACTS]

    def assert_clean(self) -> None:
        others = [f for f in self.findings if f.impact not in FAILING_IMPACTS]
        assert not self.failing, (
            f"axe-core found {len(self.failing)} serious or critical violations "
            f"in {len(self.views)} views:\n"
            + "\n".join(map(str, self.failing))
            + ("\nand, not failing:\n" + "\n".join(map(str, others)) if others else "")
        )

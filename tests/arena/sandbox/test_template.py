"""Fast starts forked from a template (arena/sandbox/template.py): every attack of
tests/arena/sandbox/test_sandbox.py, run again on a sandbox forked from its bot's template,
must fail as it does in a sandbox of its own; the template imported the SDK and gRPC and ran
no bot code; a match's fork costs a fraction of a start's CPU; and a template outlives none
of its matches' ends, nor do they outlive it."""

from __future__ import annotations

import inspect
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import test_sandbox as attacks
from helpers.net import loopback_listener
from helpers.sandbox import requires_bwrap
from helpers.uploads import entry, write_bundle

from arena import processes
from arena.sandbox import cgroups
from arena.sandbox.launch import Launch
from arena.sandbox.limits import Limits
from arena.sandbox.runner import Sandbox
from arena.sandbox.template import TEMPLATES, ForkedSandbox, shadowed, template_count
from sdk.grpc_player import GrpcPlayer

pytestmark = requires_bwrap


@pytest.fixture(autouse=True)
def _control_groups() -> None:
    group = cgroups.make_group()
    if group is None:
        pytest.skip("this machine does not let the worker make control groups: no fast path")
    group.remove()


def forked(bundle: Path, launch: Launch, *, limits: Limits | None = None) -> ForkedSandbox:
    """What ``Sandbox(bundle, launch, limits=...)`` gives, through the template."""
    box = TEMPLATES.prepare(bundle, launch, limits or Limits.from_env())
    assert box is not None, "the fast path was not taken"
    return box


ATTACKS: list[Callable[..., None]] = [
    attacks.test_an_honest_bot_serves_on_its_socket_and_its_output_is_kept,
    attacks.test_no_network_at_all,
    attacks.test_no_secret_no_store_no_other_upload_no_arena_file,
    attacks.test_writes_outside_its_tmp_fail,
    attacks.test_a_fork_bomb_is_capped_and_nothing_outlives_the_sandbox,
    attacks.test_a_process_left_behind_ends_with_the_sandbox,
    attacks.test_allocating_4_gb_fails_inside_and_the_worker_is_unhurt,
    attacks.test_filling_tmp_stops_at_its_size,
    attacks.test_output_is_bounded,
    attacks.test_a_bot_that_does_not_start_is_refused_with_what_it_printed,
]


@pytest.fixture
def through_the_template(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(attacks, "Sandbox", forked)
    monkeypatch.setenv("TONK_TEST_PLANTED_SECRET", attacks.PLANTED)
    yield
    TEMPLATES.close_all()


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.__name__.removeprefix("test_") for a in ATTACKS])
def test_every_wall_holds_in_a_forked_sandbox(
    attack: Callable[..., None], through_the_template: None, tmp_path: Path
) -> None:
    kwargs: dict[str, object] = {"tmp_path": tmp_path}
    if "listener" in inspect.signature(attack).parameters:
        with loopback_listener() as served:
            attack(listener=served, **kwargs)
    else:
        attack(**kwargs)


PEEK = """
import sys
from sdk.bot import Bot

class UploadedBot(Bot):
    name = "peek"
    def act(self, obs):
        return obs.legal_actions[0]

print("PEEK", int("grpc" in sys.modules), int("sdk.server" in sys.modules), flush=True)
"""


def test_the_template_ran_no_bot_code_and_a_fork_costs_little(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path, "honest")
    (bundle / "code" / "bot_honest.py").write_text(PEEK.replace('"peek"', '"honest"'))
    launch = Launch("python", entry=entry("honest"))
    try:
        boxes = [TEMPLATES.start(bundle, launch, Limits(start_s=60)) for _ in range(3)]
        own = Sandbox(bundle, launch, limits=Limits(start_s=60)).start()
        try:
            for box in boxes:
                assert isinstance(box, ForkedSandbox)
                player = GrpcPlayer(box.address)
                assert player.describe()["name"] == "honest"
                player.close()
                # The bot found the SDK and gRPC imported already: it was forked after them.
                assert "PEEK 1 1" in box.output(), box.output()
            template = boxes[0].template  # type: ignore[union-attr]
            assert all(b.template is template for b in boxes)  # type: ignore[union-attr]
            assert "PEEK" not in template.output()  # the template never imported the bot
            # Each fork's CPU (the match's control group) is a fraction of a start's.
            forked_cpu = sorted(b.cpu_ns() for b in boxes)[1]  # type: ignore[union-attr]
            assert forked_cpu < own.cpu_ns() / 2, (forked_cpu, own.cpu_ns())
        finally:
            own.close()
            for box in boxes:
                if box is not None:
                    box.close()
    finally:
        TEMPLATES.close_all()


def test_a_template_closes_only_after_its_matches_and_its_matches_die_with_it(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path, "honest")
    launch = Launch("python", entry=entry("honest"))
    box = TEMPLATES.start(bundle, launch, Limits(start_s=60))
    assert isinstance(box, ForkedSandbox)
    template = box.template
    TEMPLATES._trim(0)  # over the capacity, but a match runs: kept
    assert template.alive() and box.process is not None and box.process.poll() is None
    box.close()
    TEMPLATES._trim(0)  # its last match ended: closed
    assert not template.alive()
    # The worker's end (here: the template's) ends every match forked from it.
    second = TEMPLATES.start(bundle, launch, Limits(start_s=60))
    assert isinstance(second, ForkedSandbox) and second.process is not None
    bot = [p.pid for p in processes.descendants(second.process.pid) if p.running]
    assert bot
    assert second.template.process is not None
    os.killpg(second.template.process.pid, signal.SIGKILL)
    assert second.process.wait(30) is not None
    second.close()
    assert [pid for pid in bot if processes.alive(pid)] == []
    TEMPLATES.close_all()


def test_bundles_shipping_the_templates_packages_and_python_less_bots_take_the_plain_path(
    tmp_path: Path,
) -> None:
    bundle = write_bundle(tmp_path, "shipper")
    (bundle / "deps" / "grpc").mkdir()
    assert shadowed(bundle) == {"grpc"}
    assert TEMPLATES.prepare(bundle, Launch("python", entry=entry("shipper")), Limits()) is None
    assert TEMPLATES.prepare(bundle, Launch("command", command=("node", "bot.js")), Limits()) is None


def test_the_templates_setting_is_read_strictly() -> None:
    assert template_count({}) > 0
    assert template_count({"TONK_SANDBOX_TEMPLATES": "0"}) == 0
    for bad in ("x", "-1", "100000"):
        with pytest.raises(ValueError, match="TONK_SANDBOX_TEMPLATES"):
            template_count({"TONK_SANDBOX_TEMPLATES": bad})

"""docker-compose.yml, checked without Docker.

The structure tests parse the file: every service has an image and a command, health checks
where something runs for long, ``depends_on`` conditions that point at services able to meet
them and no cycle, named volumes only, and configuration only through ``environment``.

:class:`ComposeStack` then runs the file's own commands *outside containers*, as local
processes: it interpolates the file as compose does, brings the services up in dependency
order, waits on each condition with the service's own health check command, and rewrites
only what a container network provides: ``SERVICE:PORT`` becomes ``127.0.0.1:LOCAL_PORT``,
the database and queue become the test's own. tests/system/test_scaleout.py uses it too.
"""

from __future__ import annotations

import ctypes.util
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.compose import (
    CLIENT_VARIABLES,
    CONDITIONS,
    CONTAINER_PORTS,
    EXTERNAL,
    ROOT,
    VARIABLES,
    ComposeStack,
    InterpolationError,
    depends,
    interpolate,
    is_one_shot,
    load_compose,
    stack_environment,
    start_order,
)
from helpers.net import get_json
from helpers.sandbox import requires_bwrap
from helpers.uploads import write_bundle

from arena.processes import run_process
from arena.sandbox import seccomp

yaml = pytest.importorskip("yaml")


# --- compose semantics -----------------------------------------------------------------------


# --- running the services as local processes --------------------------------------------------


# --- structure --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose(VARIABLES)


def arena_services(compose: dict[str, Any]) -> dict[str, Any]:
    return {n: s for n, s in compose["services"].items() if n not in EXTERNAL}


def test_every_service_has_an_image_and_a_command(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        assert service.get("image") or service.get("build"), name
    for name, service in arena_services(compose).items():
        assert service.get("build") == "." and service.get("image") == "tonk-arena:latest", name
        assert isinstance(service.get("command"), list) and service["command"], f"{name}: exec-form command"


def test_long_running_services_have_health_checks_and_restart(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        if is_one_shot(service):
            assert "healthcheck" not in service, name
            continue
        check = service.get("healthcheck")
        assert check and check["test"][0] == "CMD" and len(check["test"]) > 1, f"{name} needs a healthcheck"
        assert service.get("restart") == "unless-stopped", name
    assert {n for n, s in compose["services"].items() if is_one_shot(s)} == {"migrate", "setup"}


def test_depends_on_conditions_can_be_met(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        raw = service.get("depends_on")
        assert raw is None or isinstance(raw, dict), f"{name}: give depends_on with conditions"
        for dep, condition in depends(service).items():
            assert dep in services, f"{name} depends on unknown service {dep}"
            assert condition in CONDITIONS, f"{name} -> {dep}: {condition}"
            if condition == "service_healthy":
                assert "healthcheck" in services[dep], (
                    f"{name} waits for {dep} to be healthy; it has no check"
                )
            if condition == "service_completed_successfully":
                assert is_one_shot(services[dep]), f"{name} waits for {dep} to exit, but it runs forever"
    order = start_order(services)
    # The schema is upgraded before anything uses the store; the bots are entered once the
    # dashboard and every bot answer.
    for user in ("dashboard", "worker"):
        assert depends(services[user])["migrate"] == "service_completed_successfully"
        assert order.index("migrate") < order.index(user)
    assert depends(services["migrate"]) == {"postgres": "service_healthy"}
    bots = {n for n in services if n.startswith("bot-")}
    assert set(depends(services["setup"])) == {"dashboard", *bots}


def test_a_cycle_is_reported() -> None:
    with pytest.raises(ValueError, match="cycle: a -> b -> a"):
        start_order({"a": {"depends_on": ["b"]}, "b": {"depends_on": ["a"]}})


def test_volumes_are_named_and_declared(compose: dict[str, Any]) -> None:
    declared = set(compose.get("volumes") or {})
    used = set()
    for name, service in compose["services"].items():
        for volume in service.get("volumes") or []:
            source = str(volume).split(":", 1)[0]
            assert not source.startswith((".", "/", "~")), f"{name}: bind mount {volume}; use a named volume"
            assert source in declared, f"{name}: volume {source} is not declared"
            used.add(source)
    assert used == declared == {"redis-data", "postgres-data"}


def test_configuration_is_only_environment(compose: dict[str, Any]) -> None:
    from arena.config import load_settings

    documented = set(re.findall(r"\| `(TONK_[A-Z_]+)` \|", (ROOT / "docs/configuration.md").read_text()))
    for name, service in compose["services"].items():
        assert "env_file" not in service and "configs" not in service and "secrets" not in service, name
        environment = service.get("environment") or {}
        assert isinstance(environment, dict), f"{name}: environment as a mapping"
        for key in environment:
            if key.startswith("TONK_"):
                assert key in documented | CLIENT_VARIABLES, f"{name}: {key} is not in docs/configuration.md"
    services = compose["services"]
    env = services["dashboard"]["environment"]
    for name in ("migrate", "worker"):
        assert services[name]["environment"] == env, f"{name} must see the dashboard's settings"
    settings = load_settings(env)  # the values parse
    assert (
        settings.database_url.startswith("postgresql+psycopg://")
        and "@postgres:5432/" in settings.database_url
    )
    assert settings.redis_url == "redis://redis:6379/0"
    assert settings.operator_token == VARIABLES["TONK_OPERATOR_TOKEN"]
    assert settings.secret_key == VARIABLES["TONK_SECRET_KEY"]
    bots = {n for n in services if n.startswith("bot-")}
    assert set(settings.allowed_bot_hosts) == bots
    assert services["setup"]["environment"]["TONK_TOKEN"] == VARIABLES["TONK_OPERATOR_TOKEN"]
    assert (
        services["setup"]["environment"]["TONK_ARENA"] == f"http://dashboard:{CONTAINER_PORTS['dashboard']}"
    )


def test_secrets_must_be_set() -> None:
    with pytest.raises(InterpolationError, match="TONK_OPERATOR_TOKEN"):
        load_compose({"TONK_SECRET_KEY": "x"})
    with pytest.raises(InterpolationError, match="TONK_SECRET_KEY"):
        load_compose({"TONK_OPERATOR_TOKEN": "x", "TONK_SECRET_KEY": ""})


def test_interpolation_follows_compose() -> None:
    env = {"A": "1", "E": ""}
    assert interpolate("$$A ${A} $A ${B:-d} ${E:-d} ${E-d} ${B-d} x$${A}", env) == "$A 1 1 d d  d x${A}"


def test_workers_scale_and_bots_are_house_bots(compose: dict[str, Any]) -> None:
    from sdk.players import HOUSE_BOTS

    services = compose["services"]
    worker = services["worker"]
    assert "container_name" not in worker and "ports" not in worker, "--scale worker=N needs neither"
    assert worker["command"][:2] == ["tonk", "worker"]
    for name in (n for n in services if n.startswith("bot-")):
        command = services[name]["command"]
        assert command[:2] == ["tonk", "serve"] and command[2] == name.removeprefix("bot-")
        assert command[2] in HOUSE_BOTS
        assert command[command.index("--host") + 1] == "0.0.0.0"
        assert command[command.index("--port") + 1] == str(CONTAINER_PORTS[name])
        # the setup service enters it at that address
        assert f"register {command[2]} {name}:{CONTAINER_PORTS[name]}" in services["setup"]["command"][-1]
    assert (
        services["dashboard"]["command"][0] == "gunicorn"
        and "dashboard.wsgi:app" in services["dashboard"]["command"]
    )
    # gunicorn's own errors (414, 431) are JSON under /api only with the dashboard's worker.
    command = services["dashboard"]["command"]
    assert command[command.index("--worker-class") + 1] == "dashboard.gunicorn_worker.DashboardWorker"
    assert "0.0.0.0:8000" in services["dashboard"]["command"]
    assert services["dashboard"]["ports"] == ["8000:8000"]


def test_the_dashboard_waits_as_long_as_tonk_submit(compose: dict[str, Any]) -> None:
    """Entering a bot plays test matches before the answer: gunicorn must not kill the request
    before the client gives up, and must serve other pages meanwhile."""
    from sdk.commands.submit import DEFAULT_TIMEOUT_S

    command = compose["services"]["dashboard"]["command"]
    assert float(command[command.index("--timeout") + 1]) >= DEFAULT_TIMEOUT_S
    assert int(command[command.index("--threads") + 1]) > 1


def test_the_image_has_what_the_commands_need() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    for package in ("sdk", "arena", "dashboard", "bots"):
        assert f"COPY {package} ./{package}" in dockerfile
    assert re.search(r"pip install '\.\[arena,dashboard\]'", dockerfile)
    assert "EXPOSE 8000 50051" in dockerfile


def test_workers_can_sandbox_uploads_with_the_least_privilege(compose: dict[str, Any]) -> None:
    """bubblewrap is in the image; the worker may make user namespaces (Docker's default seccomp
    profile refuses them: ours allows them, AppArmor's is lifted) and nothing more: not
    privileged, no added capability, not root, never seccomp=unconfined."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"apt-get install[^\n]*\bbubblewrap\b", dockerfile)
    assert dockerfile.index("USER tonk") > dockerfile.index("bubblewrap")
    # The dashboard too: it checks an uploaded bot in a sandbox before entering it.
    for name in ("worker", "dashboard"):
        service = compose["services"][name]
        assert sorted(service["security_opt"]) == ["apparmor=unconfined", f"seccomp=./{PROFILE}"], name
        assert not service.get("privileged") and "cap_add" not in service and "user" not in service
    for name, service in compose["services"].items():
        for option in service.get("security_opt", []):
            assert option.replace(":", "=", 1) != "seccomp=unconfined", name
    for name, service in compose["services"].items():
        if name not in ("worker", "dashboard"):
            assert "security_opt" not in service, f"{name} runs no sandbox and needs no exception"


#: The seccomp profile of the services that run sandboxes, relative to docker-compose.yml.
PROFILE = "deploy/seccomp-bwrap.json"
#: What bubblewrap does that Docker's default profile refuses a container without CAP_SYS_ADMIN.
BWRAP_NEEDS = ("unshare", "clone", "mount", "umount2", "pivot_root")
#: What neither the worker nor bubblewrap needs, refused as in arena/sandbox/seccomp.py.
NEVER = ("ptrace", "keyctl", "add_key", "bpf", "perf_event_open", "userfaultfd", "kexec_load",
         "init_module", "finit_module", "delete_module", "open_by_handle_at", "process_vm_readv",
         "process_vm_writev", "swapon", "reboot", "acct", "io_uring_setup", "setns", "clone3")


def allowed_syscalls(profile: dict[str, Any]) -> set[str]:
    return {n for rule in profile["syscalls"] if rule["action"] == "SCMP_ACT_ALLOW" for n in rule["names"]}


def test_the_seccomp_profile_allows_bubblewrap_and_refuses_the_rest() -> None:
    profile = json.loads((ROOT / PROFILE).read_text())
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO"  # an allow-list: an unknown call is refused
    assert {a["architecture"] for a in profile["archMap"]} == {"SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"}
    for rule in profile["syscalls"]:
        assert rule["action"] in ("SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO") and "args" not in rule, rule
    allowed = allowed_syscalls(profile)
    assert set(BWRAP_NEEDS) <= allowed
    assert not set(NEVER) & allowed, set(NEVER) & allowed
    # What a Python worker always uses is there (a typo in a name would refuse it).
    assert {"read", "write", "openat", "mmap", "futex", "epoll_wait", "socket", "connect", "execve",
            "wait4", "getdents64", "newfstatat", "prctl", "seccomp", "rt_sigreturn"} <= allowed
    clone3 = [r for r in profile["syscalls"] if r["names"] == ["clone3"]]
    assert clone3 == [{"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38}]  # ENOSYS


# Loads a Docker seccomp profile with libseccomp (as runc does: names this libseccomp does not
# know are skipped), then starts an honest bot in a real sandbox under it. Without "clone" in
# the profile, clone is allowed without namespace flags, as Docker's default profile does.
UNDER_PROFILE = r"""
import ctypes, json, sys
from pathlib import Path
lib = ctypes.CDLL("libseccomp.so.2")
lib.seccomp_init.restype = ctypes.c_void_p
profile = json.loads(Path(sys.argv[1]).read_text())
ctx = ctypes.c_void_p(lib.seccomp_init(ctypes.c_uint32(0x00050000 | profile["defaultErrnoRet"])))
names = set()
for rule in profile["syscalls"]:
    action = 0x7FFF0000 if rule["action"] == "SCMP_ACT_ALLOW" else 0x00050000 | rule["errnoRet"]
    for name in rule["names"]:
        names.add(name)
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        if nr >= 0 and lib.seccomp_rule_add(ctx, ctypes.c_uint32(action), nr, 0) != 0:
            sys.exit(f"rule for {name} refused")
class Cmp(ctypes.Structure):  # struct scmp_arg_cmp
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("a", ctypes.c_uint64), ("b", ctypes.c_uint64)]
if "clone" not in names:  # SCMP_CMP_MASKED_EQ: (flags & CLONE_NEW*) == 0
    plain = Cmp(0, 7, 0x7E020000, 0)
    nr = lib.seccomp_syscall_resolve_name(b"clone")
    assert lib.seccomp_rule_add_array(ctx, ctypes.c_uint32(0x7FFF0000), nr, 1, ctypes.byref(plain)) == 0
assert lib.seccomp_load(ctx) == 0
libc = ctypes.CDLL(None, use_errno=True)
keyctl = libc.syscall(250 if sys.argv[3] == "x86_64" else 219, 0, -3, 1)
print("keyctl", keyctl, ctypes.get_errno(), flush=True)
from arena.sandbox.launch import Launch
from arena.sandbox.limits import Limits
from arena.sandbox.runner import Sandbox
from sdk.grpc_player import GrpcPlayer
launch = Launch("python", entry="bot_honest:UploadedBot")
with Sandbox(Path(sys.argv[2]), launch, limits=Limits(start_s=60)) as box:
    player = GrpcPlayer(box.address)
    print("served", player.describe()["name"], flush=True)
    player.close()
"""


@requires_bwrap
@pytest.mark.parametrize("lacking", [(), BWRAP_NEEDS])
def test_bubblewrap_sandboxes_a_bot_under_the_profile(tmp_path: Path, lacking: tuple[str, ...]) -> None:
    """Under the profile, as the worker runs in its container, a bot is sandboxed and served;
    under the same profile without what it adds for bubblewrap (Docker's default refuses those
    too), the sandbox cannot be made."""
    if seccomp.machine() not in ("x86_64", "aarch64") or not ctypes.util.find_library("seccomp"):
        pytest.skip("needs libseccomp on x86_64 or aarch64 to load the profile")
    profile = json.loads((ROOT / PROFILE).read_text())
    for rule in profile["syscalls"]:
        rule["names"] = [n for n in rule["names"] if n not in lacking]
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(profile))
    bundle = write_bundle(tmp_path, "honest")
    done = run_process(
        [sys.executable, "-c", UNDER_PROFILE, str(path), str(bundle), seccomp.machine()],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert "keyctl -1 1\n" in done.stdout, done.stdout + done.stderr  # the profile is in force: EPERM
    if lacking:
        assert done.returncode != 0 and "served" not in done.stdout
        # bubblewrap's own words for what Docker's default profile does to it
        assert "SandboxStartError" in done.stderr and "No permissions to create new namespace" in done.stderr
    else:
        assert done.returncode == 0 and "served honest" in done.stdout, done.stdout + done.stderr


# --- the commands, outside containers ---------------------------------------------------------


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.redis
def test_the_services_run_outside_containers(
    tmp_path: Path, pg_empty_url: str, redis_url: str, redis_prefix: str
) -> None:
    """Every long-running service's command starts and passes its own health check, after
    migrate (tonk db upgrade) on a test database: the dashboard under gunicorn, a worker on a
    test queue, the three house bots. (The setup service, which needs all of them, runs in
    tests/system/test_scaleout.py, on the same stack with two workers.)"""
    environment = stack_environment(pg_empty_url, redis_url, redis_prefix)
    stack = ComposeStack(tmp_path / "stack", VARIABLES, environment)
    long_running = [n for n, s in stack.services.items() if not is_one_shot(s) and n not in EXTERNAL]
    try:
        stack.up(only=["migrate", *long_running])
        assert "upgraded from an empty database" in stack.completed["migrate"].stdout
        for name in long_running:
            stack.wait_healthy(name)
        assert get_json(stack.url("/healthz")) == {"status": "ok"}
        # A worker stops cleanly on SIGTERM (docker compose stop), and --burst ends by itself.
        (worker,) = stack.instances("worker")
        assert stack.stop(worker) == 0, stack.log(worker)
        burst = run_process([*stack.command("worker"), "--burst"], env=stack.env("worker"),
                               cwd=stack.workdir, capture_output=True, text=True, timeout=60)  # fmt: skip
        assert burst.returncode == 0, burst.stderr
    finally:
        stack.down()



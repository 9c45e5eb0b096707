"""How pathwatch's Kafka clients authenticate and encrypt: one place for every client.

The default is the local broker's PLAINTEXT on 127.0.0.1, and nothing is added. For a remote
Kafka the settings ``kafka_security_protocol`` (SSL, SASL_PLAINTEXT, SASL_SSL),
``kafka_sasl_mechanism``, ``kafka_sasl_username`` and ``kafka_ssl_ca_location`` (a PEM file)
turn on TLS and SASL; the SASL password comes from $PATHWATCH_KAFKA_SASL_PASSWORD only (never
the config file, never a command line). The Python clients (librdkafka: publish, collect,
tickets, ``pipeline status``, ``stack init``) take :func:`client_config`; the Flink jobs' Java
connectors take :func:`java_properties` (``properties.*`` of their tables and sources).

>>> from pathwatch.stack.config import resolve
>>> plain = resolve(home="/tmp/pw", environ={}, file_values={})
>>> client_config("127.0.0.1:19092", plain, environ={})
{'bootstrap.servers': '127.0.0.1:19092'}
>>> remote = resolve(home="/tmp/pw", environ={}, file_values={"kafka_security_protocol": "SASL_SSL",
...     "kafka_sasl_mechanism": "SCRAM-SHA-512", "kafka_sasl_username": "pw", "kafka_ssl_ca_location": "/ca.pem"})
>>> client_config("k:9093", remote, environ={SASL_PASSWORD_ENV: "s3cret"})["sasl.password"]
's3cret'
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from pathwatch.stack.config import ConfigError, StackConfig, resolve

SASL_PASSWORD_ENV = "PATHWATCH_KAFKA_SASL_PASSWORD"
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# The Kafka client inside flink-sql-connector-kafka is shaded: its login modules have this prefix.
SHADED = "org.apache.flink.kafka.shaded."
LOGIN_MODULES = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
                 "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
                 "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}


def _security(config: StackConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """The settings in force, checked: protocol, and mechanism/username/password/ca when used."""
    protocol = (config.kafka_security_protocol or "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise ConfigError(f"kafka_security_protocol = {protocol!r}: choose one of {', '.join(PROTOCOLS)}")
    chosen = {"protocol": protocol}
    if protocol.startswith("SASL_"):
        mechanism = (config.kafka_sasl_mechanism or "").upper()
        if mechanism not in MECHANISMS:
            raise ConfigError(f"kafka_security_protocol {protocol} needs kafka_sasl_mechanism, one of {', '.join(MECHANISMS)}")
        if not config.kafka_sasl_username or not environ.get(SASL_PASSWORD_ENV):
            raise ConfigError(f"kafka_security_protocol {protocol} needs kafka_sasl_username and the password in "
                              f"${SASL_PASSWORD_ENV}")
        chosen.update(mechanism=mechanism, username=config.kafka_sasl_username, password=environ[SASL_PASSWORD_ENV])
    if protocol.endswith("SSL") and config.kafka_ssl_ca_location:
        chosen["ca"] = config.kafka_ssl_ca_location
    return chosen


def security_settings(config: StackConfig | None = None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """librdkafka's security settings (empty for PLAINTEXT)."""
    config = config if config is not None else resolve()
    chosen = _security(config, os.environ if environ is None else environ)
    if chosen["protocol"] == "PLAINTEXT":
        return {}
    values = {"security.protocol": chosen["protocol"]}
    if "mechanism" in chosen:
        values.update({"sasl.mechanism": chosen["mechanism"], "sasl.username": chosen["username"],
                       "sasl.password": chosen["password"]})
    if "ca" in chosen:
        values["ssl.ca.location"] = chosen["ca"]
    return values


def client_config(bootstrap: str, config: StackConfig | None = None, environ: Mapping[str, str] | None = None,
                  **extra: Any) -> dict[str, Any]:
    """A confluent_kafka client's configuration: ``extra``, the bootstrap servers and the security settings."""
    return {**extra, "bootstrap.servers": bootstrap, **security_settings(config, environ)}


def java_properties(config: StackConfig | None = None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The same settings for the Java Kafka client of Flink's connectors (empty for PLAINTEXT)."""
    config = config if config is not None else resolve()
    chosen = _security(config, os.environ if environ is None else environ)
    if chosen["protocol"] == "PLAINTEXT":
        return {}
    values = {"security.protocol": chosen["protocol"]}
    if "mechanism" in chosen:
        quoted = {key: chosen[key].replace("\\", "\\\\").replace('"', '\\"') for key in ("username", "password")}
        values.update({"sasl.mechanism": chosen["mechanism"], "sasl.jaas.config":
                       f'{SHADED}{LOGIN_MODULES[chosen["mechanism"]]} required '
                       f'username="{quoted["username"]}" password="{quoted["password"]}";'})
    if "ca" in chosen:
        values.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": chosen["ca"]})
    return values

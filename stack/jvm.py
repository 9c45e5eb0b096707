"""The Java runtime the stack's JVMs (Kafka, Flink) use: $JAVA_HOME, else the ``java`` on PATH."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pathwatch.stack.component import StackError


def java_home() -> Path:
    """The JDK/JRE folder: $JAVA_HOME if set, else found from the ``java`` on PATH."""
    if os.environ.get("JAVA_HOME"):
        home = Path(os.environ["JAVA_HOME"])
        if not (home / "bin" / "java").exists():
            raise StackError(f"java: JAVA_HOME={home} has no bin/java")
        return home
    found = shutil.which("java")
    if found is None:
        raise StackError("java: no Java runtime (set JAVA_HOME or install OpenJDK 17, e.g. openjdk-17-jre-headless)")
    return Path(found).resolve().parents[1]


def java() -> str:
    return str(java_home() / "bin" / "java")

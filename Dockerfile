# The pathwatch image: Flink 2 (jobmanager/taskmanager) with Python 3.11, PyFlink and pathwatch,
# plus the connector jars from the same pom `pathwatch stack up` uses. docker-compose.yml runs
# it as the Flink cluster, the job submitter, the collectors and the init service.
ARG FLINK_IMAGE=flink:2.3.0-java17

# Connector jars (Kafka, JDBC + PostgreSQL driver) from Maven Central; no transitive jars
# (flink-connector-base is already in flink-dist).
FROM maven:3.9-eclipse-temurin-17 AS connectors
COPY stack/assets/flink/pom.xml /build/pom.xml
RUN mvn -B -q -f /build/pom.xml dependency:copy-dependencies -DexcludeTransitive=true -DoutputDirectory=/build/jars

FROM ${FLINK_IMAGE}
USER root
# pathwatch needs Python 3.11 exactly (pyproject requires-python).
RUN apt-get update \
 && apt-get install -y --no-install-recommends software-properties-common \
 && (apt-get install -y --no-install-recommends python3.11 python3.11-venv \
     || (add-apt-repository -y ppa:deadsnakes/ppa && apt-get update \
         && apt-get install -y --no-install-recommends python3.11 python3.11-venv)) \
 && rm -rf /var/lib/apt/lists/*
COPY --from=connectors /build/jars/ /opt/flink/lib/
# PyFlink jobs on a session cluster need flink-python on the cluster's class path (thread
# mode embeds one interpreter per JVM), as `pathwatch stack up` does with its lib folder.
RUN cp /opt/flink/opt/flink-python-*.jar /opt/flink/lib/
WORKDIR /opt/pathwatch/src
COPY pyproject.toml constraints.txt README.md ./
# Every folder pyproject.toml maps into the package (tests/test_layout.py keeps this list whole).
COPY pathwatch ./pathwatch
COPY contract ./contract
COPY ingest ./ingest
COPY collector ./collector
COPY models ./models
COPY streaming ./streaming
COPY sql ./sql
COPY db ./db
COPY dashboards ./dashboards
COPY notebooks ./notebooks
COPY lab ./lab
COPY tickets ./tickets
COPY sim ./sim
COPY evaluation ./evaluation
COPY stack ./stack
RUN python3.11 -m venv /opt/pathwatch/venv \
 && /opt/pathwatch/venv/bin/pip install --no-cache-dir --disable-pip-version-check -c constraints.txt '.[flink]'
ENV PATH=/opt/pathwatch/venv/bin:$PATH \
    PATHWATCH_HOME=/var/lib/pathwatch
RUN mkdir -p /var/lib/pathwatch/flink && chown -R flink:flink /var/lib/pathwatch
USER flink
WORKDIR /opt/flink

# syntax=docker/dockerfile:1
# Build: the Swift toolchain the project is tested with (6.3.1; the 6.3-bookworm tag moves with
# patch releases) on Debian 12, the binary linked with the static Swift stdlib.
FROM swift:6.3.1-bookworm AS build
# Debian 12 is a stable release: its security updates should flow in, so versions are not pinned.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libmicrohttpd-dev libsqlite3-dev libssl-dev libpq-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift openapi.yaml ./
COPY Sources ./Sources
# The manifest declares the test targets and SwiftPM refuses it when their folders are missing;
# they are not compiled. Copying them keeps one plain manifest for every build.
COPY Tests ./Tests
# Stripped: the runtime image has no Swift backtracer to symbolicate a crash with anyway.
RUN swift build -c release --product modalstack --static-swift-stdlib \
    && install -D --strip .build/release/modalstack /out/modalstack

# Run: slim Debian 12 with only the C runtime libraries, as a non-root user.
FROM debian:bookworm-slim
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libmicrohttpd12 libsqlite3-0 libssl3 libpq5 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 modalstack \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/modalstack --create-home modalstack \
    && install -d -o 10001 -g 10001 /var/lib/modalstack/data
COPY --from=build /out/modalstack /usr/local/bin/modalstack
USER 10001:10001
WORKDIR /var/lib/modalstack
ENV MODALSTACK_HOST=0.0.0.0 \
    MODALSTACK_PORT=8080 \
    MODALSTACK_DB=/var/lib/modalstack/data/modalstack.sqlite
VOLUME ["/var/lib/modalstack/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["/usr/local/bin/modalstack", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/modalstack"]

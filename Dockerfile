# The llm-inference-bench command in an image: `docker run --rm IMAGE run --url …`.
# Built from the repository root: `docker build -t llm-inference-bench .` (deploy/docker/README.md).
#
# Two stages: the release build in the Rust image, then Debian slim with the binary alone, run as
# an unprivileged user. crates/cli/src/deploy_docker_tests.rs checks this file (non-root user,
# only the binary copied, --locked, the entrypoint and the flags it passes).

FROM rust:1-bookworm AS builder
WORKDIR /src
# What the build reads: the workspace, its lock file, the crates and the results schema that
# llmib-report embeds (no target/, so a developer's build folder stays out of the context).
COPY Cargo.toml Cargo.lock ./
COPY crates crates
COPY schemas schemas
# Debug info stripped: the workspace's release profile keeps line tables for local profiling.
ENV CARGO_PROFILE_RELEASE_STRIP=debuginfo
RUN cargo build --release --locked -p llm-inference-bench

FROM debian:bookworm-slim
# CA certificates for HTTPS endpoints (hosted APIs, a hub behind TLS).
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --user-group --home-dir /work --create-home --shell /usr/sbin/nologin llmib
COPY --from=builder /src/target/release/llm-inference-bench /usr/local/bin/llm-inference-bench
USER 10001:10001
# Results go to ./results by default: mount a volume here to keep them.
WORKDIR /work
ENTRYPOINT ["llm-inference-bench"]
CMD ["--help"]

# The hub (`llm-inference-bench hub serve`) in an image, with its SQLite database on a volume.
# Built from the repository root:
#   docker build -f deploy/docker/hub.Dockerfile -t llm-inference-bench-hub .
# and run as deploy/docker/README.md shows. crates/cli/src/deploy_docker_tests.rs checks this
# file (non-root user, only the binary copied, --locked, the flags, EXPOSE = --listen's port).

FROM rust:1-bookworm AS builder
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY crates crates
COPY schemas schemas
ENV CARGO_PROFILE_RELEASE_STRIP=debuginfo
RUN cargo build --release --locked -p llm-inference-bench

FROM debian:bookworm-slim
# The same uid as deploy/kubernetes/hub.yaml's runAsUser, so a volume moves between the two.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin llmib \
 && mkdir /data \
 && chown 10001:10001 /data
COPY --from=builder /src/target/release/llm-inference-bench /usr/local/bin/llm-inference-bench
USER 10001:10001
# The SQLite database (created on first start; schema migrations run when it is opened).
VOLUME /data
WORKDIR /data
EXPOSE 8080
ENTRYPOINT ["llm-inference-bench"]
# A PostgreSQL database instead: give the command with `--db postgres://…` (README).
CMD ["hub", "serve", "--listen", "0.0.0.0:8080", "--db", "/data/hub.db"]

# SPDX-License-Identifier: BSD-2-Clause
# ferry in a container: Debian 12 slim, built in two stages. The first
# builds the Debian package with `make deb` (the same package as on a host,
# lintian-checked); the second installs it, so the runtime libraries are the
# package's own Depends. The user `ferry` is made first with a fixed uid and
# gid (10001), so that the package's postinst keeps it and an orchestrator
# can check the numeric USER (Kubernetes' runAsNonRoot needs a number).
#
#   docker build -t ferry .
#   docker run -d --name ferry -p 1080:1080 --stop-timeout 45 \
#       -v /srv/ferry:/etc/ferry:ro ferry
#
# /etc/ferry is a volume: mount a directory holding ferry.conf (and the
# userlist, rules files, certificates it names). Without one, the image's
# contrib/docker/ferry.conf applies: SOCKS5/HTTP on 0.0.0.0:1080 for clients
# from private networks only, /metrics and /healthz on 0.0.0.0:9090 (the
# HEALTHCHECK below asks /healthz there: keep [metrics] listen on port 9090
# in your own configuration, or run with --no-healthcheck). ferry logs to
# stderr (docker logs). SIGTERM starts ferry's drain: open sessions finish
# for up to shutdown_timeout (30 s); give `docker stop` more than that
# (--stop-timeout 45, or compose's stop_grace_period: 45s).

FROM debian:12-slim AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends make libc6-dev
WORKDIR /src
COPY . .
# make installs what it needs (BUILD_PKGS and DEB_PKGS of the Makefile).
RUN make deb DEB_OUT=/dist

FROM debian:12-slim
ENV DEBIAN_FRONTEND=noninteractive
COPY --from=build /dist/ /tmp/dist/
RUN groupadd --gid 10001 ferry \
 && useradd --uid 10001 --gid ferry --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin ferry \
 && apt-get update \
 && apt-get install -y --no-install-recommends /tmp/dist/ferry_*.deb \
 && rm -rf /tmp/dist /var/lib/apt/lists/*
COPY contrib/docker/ferry.conf /etc/ferry/ferry.conf
VOLUME ["/etc/ferry"]
USER 10001:10001
EXPOSE 1080/tcp 9090/tcp
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9090 && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && read -r status <&3 && [[ $status == HTTP/1.?' 200'* ]]"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/ferry", "serve", "-c", "/etc/ferry/ferry.conf"]

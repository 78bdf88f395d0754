# The Giraffe server image: a static binary on distroless, run as a
# non-root user, data in /data, configuration in /conf/zoo.cfg.
#
#   docker build -t giraffe --build-arg VERSION=$(git describe --always --dirty) .
#   docker run -p 2181:2181 -p 7000:7000 -v giraffe-data:/data giraffe
#
# The binary comes from scripts/build-static.sh, which `make docker-check`
# runs and tests on a machine without a Docker engine.
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=unknown
RUN scripts/build-static.sh /out/giraffe "$VERSION"
# distroless has no shell to create the data directory in, so it is made
# here with the owner the server runs as.
RUN mkdir -p /out/data && chown 65532:65532 /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/giraffe /giraffe
COPY --from=build --chown=65532:65532 /out/data /data
COPY packaging/zoo.cfg /conf/zoo.cfg
USER 65532:65532
VOLUME ["/data"]
# client, peer (the port of the server.N lines), metrics, admin
EXPOSE 2181 2888 7000 7001
ENTRYPOINT ["/giraffe", "server", "--config", "/conf/zoo.cfg"]

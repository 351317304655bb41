FROM debian:bookworm
WORKDIR /opt/sparsetune
COPY . .
RUN bash scripts/setup.sh && bash scripts/build.sh sparsetune && \
    cmake --install build --prefix /usr/local
ENTRYPOINT ["sparsetune"]

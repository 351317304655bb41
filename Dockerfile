FROM debian:bookworm
WORKDIR /opt/sparsetune
COPY . .
RUN bash scripts/setup.sh && bash scripts/build.sh sparsetune
ENV PATH=/opt/sparsetune/build/apps/sparsetune:$PATH
ENTRYPOINT ["sparsetune"]

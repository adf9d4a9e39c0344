#!/usr/bin/env bash
# Builds StreamBed's Flink job with plain javac against a Flink distribution's lib/ and the Kafka
# connector's jars (no downloads: the Makefile installs both from PyPI). The connector's classes go
# into the job jar, so a cluster runs the Kafka source with nothing added to its lib/.
#   flink/build.sh <FLINK_HOME> <out.jar> <CONNECTOR_LIB>
# CONNECTOR_LIB holds flink-connector-kafka.jar and kafka-clients.jar.
set -euo pipefail

if [[ $# -ne 3 ]]; then
    echo "usage: $0 <FLINK_HOME> <out.jar> <CONNECTOR_LIB>" >&2
    exit 2
fi
FLINK_HOME=$1
OUT=$2
CONNECTOR_LIB=$(cd "$3" 2>/dev/null && pwd) || { echo "error: no directory $3" >&2; exit 1; }
CONNECTOR_JARS=("$CONNECTOR_LIB/flink-connector-kafka.jar" "$CONNECTOR_LIB/kafka-clients.jar")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if ! compgen -G "$FLINK_HOME/lib/flink-dist*.jar" >/dev/null; then
    echo "error: no flink-dist jar under $FLINK_HOME/lib" >&2
    exit 1
fi
for j in "${CONNECTOR_JARS[@]}"; do
    [[ -f $j ]] || { echo "error: no $(basename "$j") in $CONNECTOR_LIB (make flink-job installs it)" >&2; exit 1; }
done
command -v javac >/dev/null || { echo "error: javac not found (install a JDK 17)" >&2; exit 1; }

mkdir -p "$(dirname "$OUT")"
OUT=$(cd "$(dirname "$OUT")" && pwd)/$(basename "$OUT")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/streambed-build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

mapfile -t SOURCES < <(find "$HERE/src/main/java" -name '*.java' | sort)
javac --release 17 -nowarn -Xlint:none -encoding UTF-8 \
    -cp "$FLINK_HOME/lib/*:$(IFS=:; echo "${CONNECTOR_JARS[*]}")" -d "$WORK/classes" "${SOURCES[@]}"
# The connector's classes and service files, without the jars' manifests and signatures; service
# files that StreamBed's resources also declare are merged, not replaced.
for j in "${CONNECTOR_JARS[@]}"; do
    (cd "$WORK/classes" && jar xf "$j")
done
rm -f "$WORK/classes/META-INF/MANIFEST.MF" "$WORK/classes/module-info.class" "$WORK"/classes/META-INF/*.{SF,RSA,DSA}
if [[ -d "$HERE/src/main/resources" ]]; then
    (cd "$HERE/src/main/resources" && find . -type f) | while read -r f; do
        mkdir -p "$(dirname "$WORK/classes/$f")"
        if [[ $f == ./META-INF/services/* && -f $WORK/classes/$f ]]; then
            printf '\n' >>"$WORK/classes/$f"
            cat "$HERE/src/main/resources/$f" >>"$WORK/classes/$f"
        else
            cp "$HERE/src/main/resources/$f" "$WORK/classes/$f"
        fi
    done
fi
printf 'Main-Class: org.streambed.flink.StreamBedJob\n' >"$WORK/manifest.txt"
rm -f "$OUT.tmp"
jar --create --file "$OUT.tmp" --manifest "$WORK/manifest.txt" -C "$WORK/classes" .
mv "$OUT.tmp" "$OUT"
echo "built $OUT"

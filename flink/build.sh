#!/usr/bin/env bash
# Builds StreamBed's Flink job with plain javac against a Flink distribution's lib/ (no downloads).
#   flink/build.sh <FLINK_HOME> <out.jar>
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 <FLINK_HOME> <out.jar>" >&2
    exit 2
fi
FLINK_HOME=$1
OUT=$2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if ! compgen -G "$FLINK_HOME/lib/flink-dist*.jar" >/dev/null; then
    echo "error: no flink-dist jar under $FLINK_HOME/lib" >&2
    exit 1
fi
command -v javac >/dev/null || { echo "error: javac not found (install a JDK 17)" >&2; exit 1; }

mkdir -p "$(dirname "$OUT")"
OUT=$(cd "$(dirname "$OUT")" && pwd)/$(basename "$OUT")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/streambed-build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

mapfile -t SOURCES < <(find "$HERE/src/main/java" -name '*.java' | sort)
javac --release 17 -nowarn -Xlint:none -encoding UTF-8 -cp "$FLINK_HOME/lib/*" -d "$WORK/classes" "${SOURCES[@]}"
if [[ -d "$HERE/src/main/resources" ]]; then
    cp -R "$HERE/src/main/resources/." "$WORK/classes/"
fi
printf 'Main-Class: org.streambed.flink.StreamBedJob\n' >"$WORK/manifest.txt"
rm -f "$OUT.tmp"
jar --create --file "$OUT.tmp" --manifest "$WORK/manifest.txt" -C "$WORK/classes" .
mv "$OUT.tmp" "$OUT"
echo "built $OUT"

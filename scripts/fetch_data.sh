#!/usr/bin/env bash
# Fetches the grader prompt template and the HealthBench data files, and checks their sha256.
# Neither is committed: the template is OpenAI's text (MIT) and OpenAI asks that the examples
# not be reposted.
#
# Sources, in order:
#   1. a local mirror folder: $HB_REFERENCE_DIR, else $HB_SHARED_DIR (the tests' variable for the
#      same folder), else ../shared beside the checkout, laid out as
#        <mirror>/reference/grader_template.txt
#        <mirror>/data/healthbench/*.jsonl[.gz]
#      (our machines have no internet and keep them there);
#      When a mirror exists it is the only source: nothing is downloaded.
#   2. otherwise the official sources: the GRADER_TEMPLATE string of simple-evals' healthbench_eval.py at
#      commit ee3b0318d8d1d9d72755a4120879be65f7c07e9e (stripped as the reference strips it),
#      the dataset files from OpenAI's public URLs, and HealthBench Professional
#      (healthbench_professional_eval.jsonl) from its home, the Hugging Face dataset
#      openai/healthbench-professional.
#
# Usage: scripts/fetch_data.sh [--dest DIR] [--template-only] [--offline]
#   --dest DIR        where to put them (default: <repo>/data): DIR/grader_template.txt,
#                     DIR/healthbench/<file>, and DIR/SHA256SUMS recording every hash
#   --template-only   fetch only the template (used by the container build)
#   --offline         never download; use the local mirror only
# Exit status: 0 when the template and at least one main-set file are in place (or the
# template alone with --template-only); 1 on a hash mismatch or when nothing could be fetched.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/data"
template_only=0
offline=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dest) dest=$2; shift 2 ;;
    --template-only) template_only=1; shift ;;
    --offline) offline=1; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "fetch_data: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

mirror=${HB_REFERENCE_DIR:-${HB_SHARED_DIR:-$root/../shared}}
if [ -d "$mirror/reference" ] || [ -d "$mirror/data/healthbench" ]; then
  offline=1
  echo "fetch_data: using the local mirror $mirror (no downloads)"
fi
commit=ee3b0318d8d1d9d72755a4120879be65f7c07e9e
eval_url="https://raw.githubusercontent.com/openai/simple-evals/$commit/healthbench_eval.py"
data_base="https://openaipublic.blob.core.windows.net/simple-evals/healthbench"
template_sha=2adffd51fd259554ebcd036ad1072d4aa2b7ce3aec2bbffe36271f911632ed3c

# file name -> pinned sha256 ("" = record and print only). The meta-eval file's URL is the
# reference's INPUT_PATH (healthbench_meta_eval.py at $commit). Its pin could not be taken from
# OpenAI's download here (no internet): it is the sha256 (and 136,224,466 bytes) that a Git LFS
# pointer of the same file records (wang-zijie/generating_dynamic_rubric@42b2dac, see
# ../shared/data/healthbench/SOURCES.md). A download that hashes otherwise stops with both
# hashes printed.
declare -A pinned=(
  [2025-05-07-06-14-12_oss_eval.jsonl]=e99dd3c6372c10d6fcc5e385c5fae69d0dd40392dae56836ef9493ae324ecd2f
  [2025-05-07-06-14-12_oss_meta_eval.jsonl]=6a343ed3fcb6f28353c2c6c157ae30ddf2db874c947b27ba474ad54da9c5dbac
  [hard_2025-05-08-21-00-10.jsonl]=""
  [consensus_2025-05-09-20-00-46.jsonl]=""
  # HealthBench Professional (simple-evals PR #108, 525 records). Not verified here (no
  # internet): the sha256 two independent public projects pin for this file of the Hugging Face
  # dataset; a mismatch stops the script and prints the hash got.
  [healthbench_professional_eval.jsonl]=d44b08e6e952e04c945e2c406f02533d9e7a989a84e35820ee7efdff20c9e4e2
)
# file name -> its URL, when not under $data_base.
declare -A urls=(
  [healthbench_professional_eval.jsonl]=https://huggingface.co/datasets/openai/healthbench-professional/resolve/main/healthbench_professional_eval.jsonl
)

mkdir -p "$dest/healthbench"
sums="$dest/SHA256SUMS"
: > "$sums.new"
sha() { sha256sum "$1" | cut -d' ' -f1; }
record() { echo "$(sha "$1")  ${1#"$dest"/}" >> "$sums.new"; }
download() {  # url out
  curl -fsSL --retry 2 --connect-timeout 20 -o "$2.part" "$1" && mv "$2.part" "$2"
}

# --- the template -----------------------------------------------------------------------
tmpl="$dest/grader_template.txt"
if [ -f "$mirror/reference/grader_template.txt" ]; then
  install -m 0644 "$mirror/reference/grader_template.txt" "$tmpl.new"
  echo "fetch_data: template from local mirror $mirror/reference"
elif [ "$offline" = 0 ]; then
  echo "fetch_data: template from $eval_url"
  download "$eval_url" "$dest/healthbench_eval.py"
  py=$(command -v /usr/bin/python3 || command -v python3)
  "$py" - "$dest/healthbench_eval.py" "$tmpl.new" <<'PY'
import ast, sys
tree = ast.parse(open(sys.argv[1], encoding="utf-8").read())
for node in ast.walk(tree):
    if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "GRADER_TEMPLATE" for t in node.targets):
        text = ast.literal_eval(node.value).strip()
        open(sys.argv[2], "w", encoding="utf-8", newline="").write(text)
        break
else:
    sys.exit("GRADER_TEMPLATE not found in healthbench_eval.py")
PY
  rm -f "$dest/healthbench_eval.py"
else
  echo "fetch_data: no local mirror at $mirror and --offline given" >&2
  exit 1
fi
got=$(sha "$tmpl.new")
if [ "$got" != "$template_sha" ]; then
  echo "fetch_data: grader template sha256 mismatch: expected $template_sha, got $got" >&2
  rm -f "$tmpl.new"
  exit 1
fi
mv "$tmpl.new" "$tmpl"
record "$tmpl"
echo "fetch_data: template ok (sha256 $got)"

if [ "$template_only" = 1 ]; then
  mv "$sums.new" "$sums"
  exit 0
fi

# --- the dataset files ------------------------------------------------------------------
have_main=0
for name in "${!pinned[@]}"; do
  out="$dest/healthbench/$name"
  src=""
  for cand in "$mirror/data/healthbench/$name" "$mirror/data/healthbench/$name.gz"; do
    if [ -f "$cand" ]; then src=$cand; break; fi
  done
  if [ -n "$src" ]; then
    case "$src" in *.gz) out="$out.gz" ;; esac
    install -m 0644 "$src" "$out"
    echo "fetch_data: $name from local mirror"
  elif [ "$offline" = 0 ] && [ ! -f "$out" ]; then
    url=${urls[$name]:-$data_base/$name}
    echo "fetch_data: downloading $url"
    if ! download "$url" "$out"; then
      echo "fetch_data: could not download $name (no internet?)" >&2
      rm -f "$out.part"
      continue
    fi
  fi
  [ -f "$out" ] || continue
  want=${pinned[$name]}
  if [ -n "$want" ] && [[ "$out" != *.gz ]]; then
    got=$(sha "$out")
    if [ "$got" != "$want" ]; then
      echo "fetch_data: $name sha256 mismatch: expected $want, got $got" >&2
      exit 1
    fi
  fi
  record "$out"
  echo "fetch_data: $name sha256 $(sha "$out")"
  case "$name" in 2025-05-07-06-14-12_oss_eval.jsonl) have_main=1 ;; esac
done

# Partial copies in the mirror (e.g. *.head30.jsonl: the first records of an official file,
# checked byte for byte upstream of us) are taken too, under their own names, so a machine
# without internet can still run the pipeline on real records.
for src in "$mirror"/data/healthbench/*.jsonl; do
  [ -f "$src" ] || continue
  base=$(basename "$src")
  [ -n "${pinned[$base]+x}" ] && continue
  install -m 0644 "$src" "$dest/healthbench/$base"
  record "$dest/healthbench/$base"
  echo "fetch_data: partial file $base sha256 $(sha "$src") (from local mirror)"
  case "$base" in 2025-05-07-06-14-12_oss_eval.*) have_main=1 ;; esac
done
mv "$sums.new" "$sums"
if [ "$have_main" = 0 ]; then
  echo "fetch_data: no main-set file could be fetched" >&2
  exit 1
fi
echo "fetch_data: hashes recorded in $sums"

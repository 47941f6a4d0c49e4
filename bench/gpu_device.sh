#!/usr/bin/env bash
# The GPU check, on a machine with an NVIDIA device and its driver.
#
#     python bench/gpu_device.py                     # here: builds out/gpu-device
#     bash bench/gpu_device.sh out/gpu-device LOGDIR  # there, from the repository's root
#     bash bench/gpu_device.sh out/gpu-device LOGDIR programs gpt   # only those steps
#
# It runs only what bench/gpu_device.py built, plus bench/gpu_torch.py under
# the machine's own python3 (PyTorch with CUDA), and writes everything it
# prints to LOGDIR/gpu_device.log (the sanitizers' reports beside it):
#   1. the device: nvidia-smi and the driver's version;
#   2. every device program against its host twin's output: every digit;
#   3. the GPU GPT trained for 200 steps against the host GPT's output (all
#      but the tokens/s column);
#   4. the GPU GPT for a few steps under compute-sanitizer's memcheck and
#      racecheck;
#   5. tokens/s of the GPU GPT, of the host GPT on this machine's cores and of
#      the same model in PyTorch on CUDA, at the example's size and at four
#      times its width: one table of ratios (LOGDIR/speed.md too).
# It exits 1 if a digit differs or a sanitizer reports an error; a tool the
# machine lacks (nvidia-smi, compute-sanitizer, PyTorch's CUDA) is named and
# its step passed over. Under tests/c/fake_cuda.c (LD_LIBRARY_PATH) it runs
# the same steps on the CPU, which is how tests/test_gpu_device.py checks it.
set -uo pipefail

usage="usage: bash bench/gpu_device.sh PREPARED LOGDIR [device|programs|gpt|sanitizers|speed ...]"
prepared=${1:?$usage}
logs=${2:?$usage}
shift 2
steps=("$@")
[[ $# == 0 ]] && steps=(device programs gpt sanitizers speed)
corpus=examples/gpt/corpus.txt
python=${PYTHON:-python3}
repeats=${REPEATS:-3}
failures=0

section() { printf '\n== %s\n' "$*"; }
fail() { echo "DIFFERS: $*"; failures=$((failures + 1)); }

# The GPT's rows are: step, training loss, validation loss, tokens/s since the
# first step began. Without that last column, what remains must match.
without_speed() { sed -E 's/^( *[0-9]+ +[0-9.]+ +[0-9.]+) +[0-9]+$/\1/' "$1"; }

# Tokens/s of the steps after the first, from the first row's rate and the
# last row's running one (as bench/gpt_vs_torch.py reads them).
mica_rate() {
    awk -v tokens="$1" '/^validation/ { exit }
        NF == 4 && $1 ~ /^[0-9]+$/ && $4 ~ /^[0-9]+$/ { if (!first) { first = $1; r1 = $4 } last = $1; rl = $4 }
        END { if (last > first) printf "%.0f\n", (last - first) * tokens / (last * tokens / rl - first * tokens / r1) }'
}

find_sanitizer() {
    command -v compute-sanitizer && return
    for candidate in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda-*/bin/compute-sanitizer \
                     /opt/nvidia/*/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
        [[ -x $candidate ]] && { echo "$candidate"; return; }
    done
}

device() {
    section "1. the device"
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi
        nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv
    else
        echo "nvidia-smi: not on this machine"
    fi
    local driver
    driver=$(ldconfig -p 2>/dev/null | sed -n 's/^\tlibcuda.so.1 .*=> //p' | head -1)
    echo "libcuda.so.1: ${driver:-not found by ldconfig -p}${LD_LIBRARY_PATH:+; LD_LIBRARY_PATH=$LD_LIBRARY_PATH}"
    echo "host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
}

programs() {
    section "2. device programs against their host twins"
    local program name out
    out=$(mktemp)
    for program in "$prepared"/programs/*; do
        [[ $program == *.host ]] && continue
        name=$(basename "$program")
        if ! timeout 120 "$program" >"$out" 2>"$out.err"; then
            fail "$name stopped: $(head -c 400 "$out.err")"
        elif cmp -s "$out" "$program.host"; then
            echo "same digits: $name ($(wc -l <"$out") lines)"
        else
            fail "$name"
            diff "$program.host" "$out" | head -20
        fi
    done
    rm -f "$out" "$out.err"
}

gpt() {
    section "3. the GPU GPT, 200 steps, against the host GPT"
    local out
    out=$(mktemp)
    if ! timeout 300 "$prepared/gpt/check" --steps 200 --corpus "$corpus" >"$out" 2>"$out.err"; then
        fail "the GPU GPT stopped: $(head -c 400 "$out.err")"
    elif diff <(without_speed "$prepared/gpt/check.host") <(without_speed "$out") >"$out.diff"; then
        echo "same digits: the GPU GPT's losses, validation and sample are the host GPT's"
        grep -E '^ *[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9]+$' "$out"
    else
        fail "the GPU GPT's output"
        head -20 "$out.diff"
    fi
    rm -f "$out" "$out.err" "$out.diff"
}

sanitizers() {
    section "4. compute-sanitizer on the GPU GPT, 3 steps"
    local sanitizer tool
    sanitizer=$(find_sanitizer)
    if [[ -z $sanitizer ]]; then
        echo "compute-sanitizer: not on this machine; passed over"
        return
    fi
    echo "$sanitizer: $("$sanitizer" --version | tail -1)"
    for tool in memcheck racecheck; do
        if timeout 240 "$sanitizer" --tool "$tool" --error-exitcode 9 --log-file "$logs/$tool.log" \
                "$prepared/gpt/check" --steps 3 --corpus "$corpus" >/dev/null; then
            echo "$tool: no error ($(grep -m1 -E 'SUMMARY' "$logs/$tool.log" | sed 's/^=* *//'))"
        else
            local status=$?
            if [[ $status == 9 ]]; then
                fail "$tool reports errors: $logs/$tool.log"
                grep -m10 -E 'Invalid|Race|Hazard|ERROR|error' "$logs/$tool.log"
            else
                echo "$tool: the sanitizer could not run here (status $status):"
                tail -5 "$logs/$tool.log"
            fi
        fi
    done
}

speed() {
    section "5. tokens/s: the GPU GPT, the host GPT on $(nproc) cores, PyTorch on CUDA (best of $repeats, interleaved)"
    local env size STEPS B T C H L tokens r gpu host torch best_gpu best_host best_torch torch_note
    local table="| size | Mica GPU | Mica CPU, $(nproc) threads | PyTorch CUDA | GPU / CPU | GPU / PyTorch |"$'\n'"|---|---|---|---|---|---|"
    for env in "$prepared"/gpt/*.env; do
        size=$(basename "$env" .env)
        # shellcheck disable=SC1090
        . "$env"
        tokens=$((B * T))
        best_gpu=0 best_host=0 best_torch=0 torch_note=""
        echo "$size: L$L H$H C$C T$T B$B, $STEPS steps measured after the first"
        for ((r = 1; r <= repeats; r++)); do
            gpu=$("$prepared/gpt/gpu-$size" --corpus "$corpus" --steps $((STEPS + 1)) | mica_rate "$tokens")
            host=$("$prepared/gpt/host-$size" --corpus "$corpus" --steps $((STEPS + 1)) | mica_rate "$tokens")
            torch=$("$python" bench/gpu_torch.py "$prepared/gpt/init-$size.safetensors" "$prepared/gpt/batch-$size.txt" \
                    "$STEPS" 2>&1)
            # the first round shows PyTorch's step-1 loss beside Mica's, or why it cannot run
            if [[ $r == 1 ]]; then
                grep -m1 '^step-1 loss' <<<"$torch" || tail -1 <<<"$torch"
            fi
            torch=$(sed -n 's/^tokens\/s //p' <<<"$torch")
            [[ -z $torch ]] && torch_note="-"
            echo "  round $r: GPU ${gpu:-?}, CPU ${host:-?}, PyTorch ${torch:--}"
            ((${gpu:-0} > best_gpu)) && best_gpu=$gpu
            ((${host:-0} > best_host)) && best_host=$host
            ((${torch:-0} > best_torch)) && best_torch=$torch
        done
        table+=$'\n'"$(awk -v s="$size" -v g="$best_gpu" -v h="$best_host" -v t="${torch_note:-$best_torch}" 'BEGIN {
            ratio_t = (t == "-" || t == 0) ? "-" : sprintf("%.2f", g / t)
            printf "| %s | %d | %d | %s | %.2f | %s |", s, g, h, t, (h ? g / h : 0), ratio_t }')"
    done
    echo
    echo "$table" | tee "$logs/speed.md"
}

main() {
    local step
    for step in "${steps[@]}"; do
        case $step in
            device | programs | gpt | sanitizers | speed) "$step" ;;
            *) echo "$usage"; return 2 ;;
        esac
    done
    section "done: $failures difference(s)"
    [[ $failures == 0 ]]
}

mkdir -p "$logs"
main 2>&1 | tee "$logs/gpu_device.log"
exit "${PIPESTATUS[0]}"

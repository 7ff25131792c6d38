# bash completion for nccltop; `make install` puts it in
# PREFIX/share/bash-completion/completions/nccltop. Self-contained: it needs
# no bash-completion helper. tests/test_install.c checks that every long
# option of `nccltop --help`, `nccltop topo --help`, `nccltop exporter --help`
# and of record, replay, export, relay and keygen is offered here.

_nccltop() {
  local cur prev cmd i
  COMPREPLY=()
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD - 1]}

  local viewer_opts="-b --batch -n --iterations --json -d --delay --stall-ms -C --no-color
    -A --ascii --dir --connect --hosts --hostfile --server-key --insecure --topology --max-memory
    --record --force --view --sort --filter --no-mouse --hide-columns --no-config -V --version -h --help"
  local record_opts="--dir --connect --hosts --hostfile --duration --max-size --last --until-alert --after
    --stall-ms --max-memory --force --help"
  local replay_opts="-b --batch -n --iterations --json -d --delay --speed --stall-ms -C
    --no-color -A --ascii --max-memory --view --sort --filter --no-mouse --hide-columns --no-config --help"
  local export_opts="--chrome-trace --stall-ms --force --help"
  local sim_opts="--ranks --comms --channels --steps --iterations --duration --linger
    --deterministic --nccl-version --abi --plugin --interval-ms --dir --nodes --quiet --stall-rank
    --stall-after --straggler --straggle-ms --net --env --rank-env --run-ahead --graph
    --alltoall --broadcast --pxn --collnet --ce --user-tag --symmetric --unnamed --trace --speed --help"
  local topo_opts="--env --from-env --nccl-version --json --compact --full --graphs --nodes --help"
  local relay_opts="--listen --dir --connect --authorized-keys --server-key --insecure -q --quiet
    -h --help"
  local keygen_opts="--force -h --help"
  local exporter_opts="--listen --textfile --per-channel --inspector -d --delay -n --stall-ms
    --dir --connect --hosts --hostfile --max-memory -h --help"
  local topo_vars="NCCL_P2P_DISABLE= NCCL_P2P_LEVEL= NCCL_NET_GDR_LEVEL= NCCL_NET_GDR_READ=
    NCCL_NET_GDR_C2C= NCCL_PXN_DISABLE= NCCL_PXN_C2C= NCCL_NVB_DISABLE= NCCL_NETDEVS_POLICY=
    NCCL_P2P_READ_ENABLE= NCCL_P2P_USE_CUDA_MEMCPY= NCCL_NET_DISABLE_INTRA=
    NCCL_NET_GDR_MLOPART= NCCL_TOPO_SPLIT_MLOPART= NCCL_IGNORE_DISABLED_P2P=
    NCCL_MIN_NCHANNELS= NCCL_MAX_NCHANNELS= NCCL_MIN_NRINGS= NCCL_MAX_NRINGS= NCCL_CROSS_NIC=
    NCCL_MIN_CTAS= NCCL_MAX_CTAS="

  # The command: the first word after nccltop that is not an option.
  cmd=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
    sim | demo | topo | exporter | record | replay | export | relay | keygen)
      cmd=${COMP_WORDS[i]}
      break
      ;;
    -*) ;;
    *) break ;;
    esac
  done

  # Values of the options that take one.
  case $prev in
  --topology | --plugin | --hostfile | --record | --chrome-trace | --authorized-keys | \
    --server-key | --trace)
    compopt -o filenames 2>/dev/null
    COMPREPLY=($(compgen -f -- "$cur"))
    return 0
    ;;
  --dir | --textfile)
    compopt -o filenames 2>/dev/null
    COMPREPLY=($(compgen -d -- "$cur"))
    return 0
    ;;
  --nccl-version)
    if [ "$cmd" = topo ]; then
      COMPREPLY=($(compgen -W "2.28 2.30" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "2.26 2.27 2.28 2.29 2.30 2.31" -- "$cur"))
    fi
    return 0
    ;;
  --view)
    COMPREPLY=($(compgen -W "overview proxy channels collectives topology environment" -- "$cur"))
    return 0
    ;;
  --sort)
    COMPREPLY=($(compgen -W "rank stalled host" -- "$cur"))
    return 0
    ;;
  --filter)
    return 0
    ;;
  --hide-columns)
    COMPREPLY=($(compgen -W "MODEL% PREVIOUS\ RUN DONE COUNT ALGBW" -- "$cur"))
    return 0
    ;;
  --until-alert)
    COMPREPLY=($(compgen -W "root stall hung_op straggler silent drops slow any" -- "$cur"))
    return 0
    ;;
  --speed)
    COMPREPLY=($(compgen -W "0.5 1 2 10 max" -- "$cur"))
    return 0
    ;;
  --abi)
    COMPREPLY=($(compgen -W "3 4 5 6 7" -- "$cur"))
    return 0
    ;;
  --net)
    COMPREPLY=($(compgen -W "ib socket" -- "$cur"))
    return 0
    ;;
  --env)
    if [ "$cmd" = topo ]; then
      compopt -o nospace 2>/dev/null
      COMPREPLY=($(compgen -W "$topo_vars" -- "$cur"))
    fi
    return 0
    ;;
  --connect)
    compopt -o nospace 2>/dev/null
    COMPREPLY=($(compgen -W "tcp:// ipc://" -- "$cur"))
    return 0
    ;;
  --hosts)
    # The job's nodes when inside a Slurm allocation (quoted: a hostlist is a glob too).
    if [ -n "$SLURM_JOB_NODELIST" ] && [[ $SLURM_JOB_NODELIST == "$cur"* ]]; then
      COMPREPLY=("$SLURM_JOB_NODELIST")
    fi
    return 0
    ;;
  -n | --iterations | -d | --delay | --stall-ms | --max-memory | --ranks | --comms | --nodes | \
    --listen | \
    --channels | --steps | --duration | --linger | --interval-ms | --stall-rank | \
    --stall-after | --straggler | --straggle-ms | --rank-env | --run-ahead | --max-size | \
    --last | --after)
    return 0
    ;;
  esac

  case $cmd in
  "")
    if [[ $cur == -* ]]; then
      COMPREPLY=($(compgen -W "$viewer_opts" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "sim demo topo exporter record replay export relay keygen" \
        -- "$cur"))
    fi
    ;;
  sim)
    COMPREPLY=($(compgen -W "$sim_opts" -- "$cur"))
    ;;
  demo)
    # Simulator options first, then the monitor's (-n for frames), -- for the rest.
    COMPREPLY=($(compgen -W "$sim_opts -b --batch -n --json -d --delay --stall-ms -C --no-color
      -A --ascii --connect --hosts --hostfile --server-key --insecure --topology --max-memory
      --view --sort --filter --no-mouse --hide-columns --no-config -V --version --" -- "$cur"))
    ;;
  relay)
    COMPREPLY=($(compgen -W "$relay_opts" -- "$cur"))
    ;;
  keygen)
    COMPREPLY=($(compgen -W "$keygen_opts" -- "$cur"))
    ;;
  exporter)
    COMPREPLY=($(compgen -W "$exporter_opts" -- "$cur"))
    ;;
  record | replay | export)
    if [[ $cur == -* ]]; then
      local o=${cmd}_opts
      COMPREPLY=($(compgen -W "${!o}" -- "$cur"))
    else
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -f -- "$cur"))
    fi
    ;;
  topo)
    if [[ $cur == -* ]]; then
      COMPREPLY=($(compgen -W "$topo_opts" -- "$cur"))
    else
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -f -X '!*.xml' -- "$cur") $(compgen -d -- "$cur"))
    fi
    ;;
  esac
  return 0
}
complete -F _nccltop nccltop

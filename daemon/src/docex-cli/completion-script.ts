/** bash and zsh completion, generated from the same command table as the help. Pure. */
import { flagNamesOf, OPERATION_COMMANDS, RESOURCE_COMMANDS } from './commands.ts';

const GLOBAL = ['--json', '--profile', '--config', '--help'];
const EXTRA_FLAGS: Record<string, string[]> = {
  'tasks upload': ['--wait', '--timeout'],
  'templates export': ['--folder', '--output'],
  'templates plan': ['--prune'],
  'templates apply': ['--prune', '--rerun', '--override'],
  rerun: ['--template', '--folder', '--from', '--to', '--ids', '--all', '--override', '--dry-run'],
};

function cases(): string {
  const flags = new Map<string, string[]>();
  for (const c of OPERATION_COMMANDS) {
    const own = c.spec.params.flatMap((p) => flagNamesOf(c.spec, p).map((n) => `--${n}`));
    if (c.spec.output === 'binary') own.push('--output');
    flags.set(`${c.resource} ${c.action}`, own);
  }
  for (const [key, own] of Object.entries(EXTRA_FLAGS)) flags.set(key, [...(flags.get(key) ?? []), ...own]);
  flags.set('upload', flags.get('tasks upload')!);
  return [...flags]
    .map(([key, own]) => `    "${key}") words="${[...own, ...GLOBAL].join(' ')}" ;;`)
    .join('\n');
}

export function completionScript(shell: 'bash' | 'zsh'): string {
  const actions = RESOURCE_COMMANDS.map((r) => {
    const names = OPERATION_COMMANDS.filter((c) => c.resource === r).map((c) => c.action);
    if (r === 'templates') names.push('export', 'plan', 'apply');
    return `    ${r}) words="${names.join(' ')}" ;;`;
  }).join('\n');
  const bash = `# docex completion for ${shell}. Load with: source <(docex completion ${shell})
_docex() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" words="" key
  if [ "$COMP_CWORD" -eq 1 ]; then
    words="${[...RESOURCE_COMMANDS, 'upload', 'rerun', 'completion', 'help'].join(' ')}"
  elif [ "$COMP_CWORD" -eq 2 ] && [[ "$cur" != -* ]]; then
    case "\${COMP_WORDS[1]}" in
${actions}
    completion) words="bash zsh" ;;
    esac
  fi
  if [ -z "$words" ] && [[ "$cur" == -* ]]; then
    case "\${COMP_WORDS[1]}" in upload|rerun) key="\${COMP_WORDS[1]}" ;; *) key="\${COMP_WORDS[1]} \${COMP_WORDS[2]}" ;; esac
    case "$key" in
${cases()}
    esac
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _docex docex
`;
  return shell === 'bash' ? bash : `autoload -U +X bashcompinit && bashcompinit\n${bash}`;
}

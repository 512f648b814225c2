/**
 * bash and zsh completion, generated from the same tables as the help: the operation table's
 * commands and docex's own (given by table.ts, their flags as `own`). Pure.
 */
import type { Command } from '@docex/cli-kit/command';
import { extraFlagsOf, flagNamesOf, OPERATION_COMMANDS, RESOURCE_COMMANDS } from './commands.ts';
import { DOCEX_GLOBAL_FLAGS as GLOBAL_FLAGS } from '@docex/cli-kit/flags';

const GLOBAL = GLOBAL_FLAGS.map((f) => `--${f.name}`);

function cases(commands: readonly Command[]): string {
  const flags = new Map<string, string[]>();
  for (const c of OPERATION_COMMANDS) {
    const own = c.spec.params.flatMap((p) => flagNamesOf(c.spec, p).map((n) => `--${n}`));
    for (const f of extraFlagsOf(c)) own.push(`--${f.name}`);
    flags.set(`${c.resource} ${c.action}`, own);
  }
  for (const c of commands)
    flags.set(
      c.name,
      c.flags.map((f) => `--${f.name}`),
    );
  flags.set('upload', flags.get('tasks upload')!);
  return [...flags]
    .map(([key, own]) => `    "${key}") words="${[...own, ...GLOBAL].join(' ')}" ;;`)
    .join('\n');
}

export function completionScript(shell: 'bash' | 'zsh', commands: readonly Command[]): string {
  /** Commands of one word (rerun, completion): their flags are keyed by that word alone. */
  const single = commands.filter((c) => !c.name.includes(' ')).map((c) => c.name);
  const actions = RESOURCE_COMMANDS.map((r) => {
    const names = OPERATION_COMMANDS.filter((c) => c.resource === r).map((c) => c.action);
    for (const c of commands) if (c.name.startsWith(`${r} `)) names.push(c.name.slice(r.length + 1));
    return `    ${r}) words="${[...new Set(names)].join(' ')}" ;;`;
  }).join('\n');
  const bash = `# docex completion for ${shell}. Load with: source <(docex completion ${shell})
_docex() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" words="" key
  if [ "$COMP_CWORD" -eq 1 ]; then
    words="${[...RESOURCE_COMMANDS, 'upload', ...single, 'help'].join(' ')}"
  elif [ "$COMP_CWORD" -eq 2 ] && [[ "$cur" != -* ]]; then
    case "\${COMP_WORDS[1]}" in
${actions}
    completion) words="bash zsh" ;;
    esac
  fi
  if [ -z "$words" ] && [[ "$cur" == -* ]]; then
    case "\${COMP_WORDS[1]}" in ${['upload', ...single].join('|')}) key="\${COMP_WORDS[1]}" ;; *) key="\${COMP_WORDS[1]} \${COMP_WORDS[2]}" ;; esac
    case "$key" in
${cases(commands)}
    esac
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _docex docex
`;
  return shell === 'bash' ? bash : `autoload -U +X bashcompinit && bashcompinit\n${bash}`;
}

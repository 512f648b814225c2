/** The watched folders as an intake source (config/intake-source.ts): each folder is its own watch. */
import type { WatchConfig } from '../config/config.ts';
import type { IntakeSource } from '../config/intake-source.ts';

/** The watched folders of the config: each is its own watch. */
export const folderSource: IntakeSource<{ watch: WatchConfig[] }> = {
  name: 'folders',
  watches: (config) => config.watch,
};

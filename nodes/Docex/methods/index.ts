export * as listSearch from './listSearch.ts';

complete -c repocc -l max-size -d 'Set the repository\'s size limit (e.g. 500M, 10G) in the user configuration, then evict down to it' -r
complete -c repocc -l evict-older-than -d 'Remove fragments not used for AGE (e.g. 3600, 90m, 12h, 7d)' -r
complete -c repocc -l completions -d 'Print a shell completion script' -r -f -a "bash\t''
zsh\t''
fish\t''"
complete -c repocc -l format -d 'Output format of --show-config and --show-stats' -r -f -a "human\t''
json\t''"
complete -c repocc -l show-config -d 'Print the configuration in effect and where each value comes from'
complete -c repocc -l show-stats -d 'Print the statistics counters'
complete -c repocc -l zero-stats -d 'Reset the statistics counters'
complete -c repocc -l clear -d 'Remove every fragment from the repository'
complete -c repocc -l cleanup -d 'Evict least recently used fragments down to the size limit'
complete -c repocc -l verify -d 'Check every fragment; report and remove the bad ones'
complete -c repocc -s h -l help -d 'Print help (see more with \'--help\')'

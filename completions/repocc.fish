complete -c repocc -l completions -d 'Print a shell completion script' -r -f -a "bash\t''
zsh\t''
fish\t''"
complete -c repocc -l format -d 'Output format of --show-config and --show-stats' -r -f -a "human\t''
json\t''"
complete -c repocc -l show-config -d 'Print the configuration in effect and where each value comes from'
complete -c repocc -l show-stats -d 'Print the statistics counters'
complete -c repocc -l zero-stats -d 'Reset the statistics counters'
complete -c repocc -s h -l help -d 'Print help (see more with \'--help\')'

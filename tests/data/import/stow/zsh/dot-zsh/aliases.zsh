alias ll='ls -lah'
alias gs='git status -sb'

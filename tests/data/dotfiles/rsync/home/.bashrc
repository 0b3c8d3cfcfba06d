# ~/.bashrc, copied from my dotfiles mirror
case $- in *i*) ;; *) return ;; esac
export PATH="$HOME/bin:$PATH"
export LESS=-R
HISTFILESIZE=20000
alias grep='grep --color=auto'
alias df='df -h'

PROMPT='%~ %# '

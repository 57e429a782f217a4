/* The shared secret of a command that serves or joins a job: from
 * --token-file, else $FTC_TOKEN, else none. */
#ifndef FTC_CLI_TOKEN_H
#define FTC_CLI_TOKEN_H

#include <stddef.h>

/* Longest token a command reads, with its NUL: what every client of a
 * job (the store client's limit) takes. */
#define FTC__CLI_TOKEN_MAX 1024

/* Reads path (NULL: none) without its trailing newline into buf, else
 * takes a non-empty $FTC_TOKEN; *token is buf, the variable's value or
 * NULL. A token with a NUL byte or longer than FTC__CLI_TOKEN_MAX - 1 is
 * refused; one shorter than 16 bytes is taken with a warning (anyone who
 * can connect can test guesses against it offline). 0, or -1 after
 * printing why to stderr as "ftc <cmd>: ...". */
int ftc__cli_token(const char *cmd, const char *path, char *buf, size_t cap,
                   const char **token);

/* A server about to listen on host without a token: 0 when that is safe
 * (host NULL, meaning the command's loopback default, or an address only
 * this host reaches) or the operator said --insecure; else -1 after
 * printing why to stderr. With a token, always 0. */
int ftc__cli_open_bind(const char *cmd, const char *host, const char *token,
                       int insecure);

#endif

# Request Tracker 5 site configuration for pathwatch's own instance (written by
# stack/rt.py from this template; the at-sign placeholders are filled in there).
Set($rtname, 'pathwatch');
Set($Organization, 'pathwatch.invalid');
Set($Timezone, 'UTC');
Set($DatabaseType, 'SQLite');
Set($DatabaseName, '@database@');
Set($WebPath, '');
Set($WebDomain, '127.0.0.1');
Set($WebPort, @port@);
Set($WebBaseURL, 'http://127.0.0.1:@port@');
# No mail leaves this instance: outgoing mail is written to files in the temp directory.
Set($MailCommand, 'testfile');
Set($BcryptCost, @bcrypt_cost@);
Set($LogToSyslog, undef);
Set($LogToSTDERR, 'warning');
Set(%GnuPG, Enable => 0);
Set(%SMIME, Enable => 0);
1;

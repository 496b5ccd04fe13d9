// create-next-app 16.4.3's layout without next/font/google, which next build would download (no network here).
export default function RootLayout({ children }: { children: React.ReactNode }) {
  return (
    <html lang="en">
      <body>{children}</body>
    </html>
  );
}
